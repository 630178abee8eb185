"""Whether a plain config value fits a type annotation, and what an annotation asks for in words.

:func:`fits` and :func:`describe` read the annotations of constructor parameters and of a
method's :class:`~memarena.core.settings.MethodSettings` fields: ``int``, ``float``, ``bool``,
``str``, ``X | None``, ``Literal[...]`` (the valid choices), ``list[...]``, ``dict[...]`` /
``Mapping``, unions, paths, and ``Annotated[X, Range(...)]`` (a number with bounds). The
pre-check (:mod:`memarena.pipeline.validate`) and the settings themselves use them, so a value
is refused with the same words before a sweep starts and when a method is built.
"""

from __future__ import annotations

import collections.abc as abc
import inspect
import math
import os
import types
import typing
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Annotated, Any


@dataclass(frozen=True)
class Range:
    """Bounds of a number, as ``Annotated[int, Range(ge=1)]`` or ``Annotated[float, Range(0,
    1)]`` (``ge`` / ``le`` inclusive, ``gt`` / ``lt`` exclusive)."""

    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    lt: float | None = None

    def holds(self, value: Any) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return True  # not a number: the type check speaks for it
        if isinstance(value, float) and math.isnan(value):
            return False
        return (
            (self.ge is None or value >= self.ge)
            and (self.le is None or value <= self.le)
            and (self.gt is None or value > self.gt)
            and (self.lt is None or value < self.lt)
        )

    def text(self) -> str:
        """``>= 1``, ``in [0, 1]``, ``> 0 and <= 1``."""
        if self.ge is not None and self.le is not None:
            return f"in [{_num(self.ge)}, {_num(self.le)}]"
        parts = [f"{op} {_num(v)}" for op, v in ((">=", self.ge), (">", self.gt),
                                                  ("<=", self.le), ("<", self.lt))
                 if v is not None]  # fmt: skip
        return " and ".join(parts)


# the bounded numbers settings use most
Count = Annotated[int, Range(ge=0)]  # 0, 1, 2, ...
Positive = Annotated[int, Range(ge=1)]  # 1, 2, ...
NonNegative = Annotated[float, Range(ge=0)]  # a temperature, a weight
Unit = Annotated[float, Range(ge=0, le=1)]  # a share, a probability, a score in [0, 1]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def written(hint: Any) -> str:
    """An annotation as a reader would write it: ``float > 0 and < 1``,
    ``Literal['x', 'p', 'g']``, ``int >= 0 | None``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        bounds = " ".join(r.text() for r in ranges(hint))
        return f"{written(args[0])} {bounds}".strip()
    if origin in (typing.Union, types.UnionType):
        return " | ".join(written(a) for a in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if hint is type(None):
        return "None"
    if origin is not None and args:
        name = getattr(origin, "__name__", str(origin))
        shown = ", ".join("..." if a is Ellipsis else written(a) for a in args)
        return f"{name}[{shown}]"
    return inspect.formatannotation(hint)


def ranges(hint: Any) -> list[Range]:
    """The :class:`Range` bounds an ``Annotated`` hint carries (none for any other hint)."""
    if typing.get_origin(hint) is typing.Annotated:
        return [m for m in typing.get_args(hint)[1:] if isinstance(m, Range)]
    return []


_SEQUENCES = (list, tuple, set, frozenset, abc.Sequence, abc.MutableSequence, abc.Iterable,
              abc.Collection, abc.Set, abc.MutableSet)  # fmt: skip
_MAPPINGS = (dict, abc.Mapping, abc.MutableMapping)
_NAMES = {int: "an int", float: "a number", bool: "true or false", str: "a string"}
_PLURALS = {int: "ints", float: "numbers", bool: "true/false values", str: "strings"}
_PATHS = (Path, PurePath, os.PathLike)


def _unknown(hint: Any) -> bool:
    return hint is Any or hint is inspect.Parameter.empty or isinstance(hint, typing.TypeVar)


def fits(value: Any, hint: Any) -> bool:
    """Whether the plain config ``value`` (int, float, bool, str, None, list, dict) fits the
    annotation ``hint``. ``bool`` is not an int here, an int is a float, a path takes a
    string, None fits only where ``None`` is allowed (``X | None``, ``Optional[X]``); a list
    or a mapping is checked item by item. An annotation the check does not know (a class, a
    Protocol, a Callable) passes: the constructor checks it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _unknown(hint):
        return True
    if origin is typing.Annotated:
        return fits(value, args[0]) and all(r.holds(value) for r in ranges(hint))
    if hint is None or hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, a) for a in args)
    if origin is typing.Literal:
        return any(value == a and isinstance(value, bool) == isinstance(a, bool) for a in args)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # nan and inf are no setting's value (a nan compares false to any bound)
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value)
        )  # fmt: skip
    if hint is str:
        return isinstance(value, str)
    if hint in _PATHS:
        return isinstance(value, (str, PurePath))
    kind = origin or hint
    if kind in _SEQUENCES:
        if not isinstance(value, (list, tuple)):
            return False
        if kind is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(map(fits, value, args))
        return all(fits(v, args[0]) for v in value) if args else True
    if kind in _MAPPINGS:
        if not isinstance(value, dict):
            return False
        if len(args) != 2:
            return True
        return all(fits(k, args[0]) and fits(v, args[1]) for k, v in value.items())
    return True


def describe(hint: Any) -> str:
    """What ``hint`` asks for, in words: ``int | None`` -> "an int or null"."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _unknown(hint):
        return "any value"
    if origin is typing.Annotated:
        bounds = " ".join(r.text() for r in ranges(hint))
        return describe(args[0]) + (f" {bounds}" if bounds else "")
    if hint is None or hint is type(None):
        return "null"
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in args if a is not type(None)]
        words = list(dict.fromkeys(describe(a) for a in arms))
        return " or ".join(words + (["null"] if len(arms) < len(args) else []))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if hint in _NAMES:
        return _NAMES[hint]
    if hint in _PATHS:
        return "a path (a string)"
    kind = origin or hint
    if kind in _SEQUENCES:
        if kind is tuple and args and args[-1] is not Ellipsis:
            return f"a list of {len(args)} ({', '.join(describe(a) for a in args)})"
        return "a list" + (f" of {_plural(args[0])}" if args and not _unknown(args[0]) else "")
    if kind in _MAPPINGS:
        if len(args) == 2 and not (_unknown(args[0]) and _unknown(args[1])):
            return f"a mapping of {_plural(args[0])} to {_plural(args[1])}"
        return "a mapping"
    return f"a {getattr(hint, '__name__', str(hint))}"


def _plural(hint: Any) -> str:
    if hint in _PLURALS:
        return _PLURALS[hint]
    return "values" if _unknown(hint) else f"values that are {describe(hint)}"


def type_name(value: Any) -> str:
    """The kind of a plain config value in words (``null``, ``a mapping``, ``int``; ``nan`` /
    ``inf`` for a float that is not finite)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value}, which is not a finite number"
    names = {type(None): "null", dict: "a mapping", list: "a list"}
    return names.get(type(value), type(value).__name__)
