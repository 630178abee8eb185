"""A method's settings as typed data: one frozen dataclass per method.

A method declares its parameters once, as the fields of a :class:`MethodSettings` subclass:
``Literal[...]`` for every choice, ``Annotated[int, Range(ge=1)]`` for a bounded number, a plain
type otherwise; each field's default is the paper's (or the released code's) value, and the
comment beside it says where it comes from. The class is the method's ``Settings``::

    @dataclass(frozen=True)
    class ReMeSettings(MethodSettings):
        extraction: Literal["keypoint", "trajectory"] = "keypoint"
        samples: Annotated[int, Range(ge=1)] = 8

    class ReMe(MemoryMethod):
        Settings = ReMeSettings

        def __init__(self, settings: ReMeSettings | None = None, /, **kwargs: Any) -> None:
            super().__init__(settings, **kwargs)
            s = self.settings  # checked, with its official readings resolved

The constructor takes the settings (or their fields as keyword arguments, which is how Hydra's
``instantiate`` passes a method's config node); ``MemoryMethod.__init__`` builds and checks them
(:meth:`MethodSettings.take`) and resolves them for the run's env (:meth:`resolved`). The
pre-check (:mod:`memarena.pipeline.validate`) reads the same fields, so a misspelled key or a
value outside a ``Literal`` or a ``Range`` is refused for every cell of a sweep before any job
starts, in the same words. A subclass of a method extends its settings by subclassing them
(EvoGraph-Mem's adds its controller's to G-Memory's).

:meth:`MethodSettings.resolved` is the place for values a run settles when it is built (a
reading named ``official`` becomes what the released code uses on this env): the method keeps
the resolved settings, and the pipeline writes them into ``metrics.json`` and the snapshot.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from memarena.core.errors import ConfigError
from memarena.core.typecheck import describe, fits, type_name


@dataclass(frozen=True)
class MethodSettings:
    """Base of a method's frozen settings dataclass (see the module docstring); as it is, the
    settings of a method that has none (``none``)."""

    # the config group a method's keys live in, for messages (``method.<key>``)
    OWNER: ClassVar[str] = "method"

    def __post_init__(self) -> None:
        hints = self.hints()
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            hint = hints.get(f.name, Any)
            if not fits(value, hint):
                raise ConfigError(value_message(f"{self.OWNER}.{f.name}", value, hint))

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def take(cls, settings: MethodSettings | None, values: dict[str, Any]):
        """The settings a constructor was given: ``settings`` itself, or built from the keyword
        arguments in ``values`` that name a field (removed from ``values``; the rest are the
        constructor's own, such as ``services``). Both at once is a TypeError."""
        names = cls.field_names()
        # plain values: a config's lists and mappings (OmegaConf's) as lists and dicts
        given = {k: plain(values.pop(k)) for k in list(values) if k in names}
        if settings is None:
            return cls(**given)
        if given:
            raise TypeError(f"{cls.__name__}: pass settings or their fields, not both: {given}")
        if not isinstance(settings, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(settings).__name__}")
        return settings

    @classmethod
    @functools.cache
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    @functools.cache
    def hints(cls) -> dict[str, Any]:
        """Each field's annotation, evaluated, ``Annotated`` bounds kept."""
        return typing.get_type_hints(cls, include_extras=True)

    # -- reading -------------------------------------------------------------------------------
    def resolved(self, env_name: str) -> MethodSettings:
        """These settings with the values a run settles on ``env_name`` filled in (default:
        none). A method whose settings name readings such as ``official`` overrides it."""
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain values (tuples as lists), for ``metrics.json`` and the snapshot."""
        return {k: plain(v) for k, v in dataclasses.asdict(self).items()}  # type: ignore[call-overload]

    def replace(self, **changes: Any):
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


# where a reading of a choice comes from (``<code>_released``: another released code's, e.g.
# memco_released for MemCo's fork of a baseline)
SOURCES = ("released", "paper", "memarena")


def reading(default: Any, **sources: Any) -> Any:
    """A setting whose values are readings of one choice (the paper's text, the code that
    produced its numbers, memarena's own where neither settles it): ``sources`` names each
    source's value (``released=``, ``paper=``, ``memarena=``, ``<code>_released=``). The
    default is the value the experiments use; a run records which source its value follows
    (:func:`readings_of`, ``metrics.json`` ``readings``)."""
    return dataclasses.field(default=default, metadata={"readings": dict(sources)})


def readings_of(settings: Any, prefix: str) -> dict[str, str]:
    """``{"<prefix>.<key>": "released" | "paper+memarena" | ... | "other"}``: for each field
    of the dataclass ``settings`` declared with :func:`reading`, the sources whose value its
    value is (joined by ``+``), or ``other`` for a value no source names."""
    out = {}
    for f in dataclasses.fields(settings):
        sources = f.metadata.get("readings")
        if not sources:
            continue
        value = plain(getattr(settings, f.name))
        names = [name for name, v in sources.items() if plain(v) == value]
        out[f"{prefix}.{f.name}"] = "+".join(names) or "other"
    return out


def plain(value: Any) -> Any:
    """Lists and mappings of any kind (tuples, OmegaConf's containers, which Hydra passes) as
    plain lists and dicts."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    return value


def value_message(key: str, value: Any, hint: Any) -> str:
    """``memarena: method.extraction='keypoints' must be one of 'keypoint', 'trajectory' (got
    str). Did you mean 'keypoint'?``: the words of the pre-check for a value that does not fit."""
    return (
        f"memarena: {key}={value!r} must be {describe(hint)} (got {type_name(value)})."
        f"{suggestion(value, hint)}"
    )


def choices_of(hint: Any) -> list[Any]:
    """The values a ``Literal`` (or a union holding one) allows; [] for any other hint."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return list(args)
    if origin is typing.Annotated:
        return choices_of(args[0])
    if args:
        return [c for a in args for c in choices_of(a)]
    return []


def suggestion(value: Any, hint: Any) -> str:
    """`` Did you mean 'keypoint'?`` for a string close to one of a ``Literal``'s choices."""
    words = [str(c) for c in choices_of(hint) if isinstance(c, str)]
    if not isinstance(value, str) or not words:
        return ""
    near = difflib.get_close_matches(value, words, n=1)
    return f" Did you mean {near[0]!r}?" if near else ""
