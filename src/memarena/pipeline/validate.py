"""Strict construction: every key of the composed config must be one that something takes.

Before anything is built, each node with a ``_target_`` (method, env and its wiki, backbone,
memory backbone, embedder, logger) is checked against the signatures of its target: for a
class, the ``__init__`` of each class along the MRO whose ``__init__`` passes ``**kwargs`` on,
up to the first that does not. The protocol is checked against
:class:`~memarena.pipeline.protocol.ProtocolSettings`, the ablation against its two keys, and
the top level against the config groups. A key nobody takes (a typo in ``conf/method/*.yaml``,
an ablation file, an experiment file or ``+method.treshold=0.9`` on the command line) ends the
run with one message naming the key, the file it came from when that is known, and the valid
keys. Without this check a misspelled key runs the experiment with the default value.

Then every value is checked against its type: the top-level ``seed`` and ``experiment_name``,
and each key of a target node against the annotation of the parameter that takes it
(:func:`fits`: ``int``, ``float``, ``bool``, ``str``, ``X | None``, ``Literal``, ``list[...]``,
``dict[...]`` / ``Mapping``, unions; an unannotated, ``Any`` or unknown annotation passes).
``method.threshold=abc`` ends the run with one message naming the key, the value and the type,
like a bad protocol value, instead of an error from inside the constructor. A value whose
interpolation cannot resolve here (``${hydra:...}`` in the pre-check) is not checked.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.utils import get_object
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memarena.core import ConfigError
from memarena.core.settings import MethodSettings, suggestion
from memarena.core.typecheck import describe, fits, type_name, written
from memarena.pipeline.protocol import ProtocolSettings

# keys Hydra's instantiate reads itself
HYDRA_KEYS = frozenset({"_target_", "_convert_", "_recursive_", "_partial_", "_args_"})
# constructor arguments the pipeline passes (never config keys)
INJECTED = {"method": frozenset({"services", "env_name"})}
TOP_LEVEL = frozenset(
    {
        "hydra",
        "seed",
        "experiment_name",
        "protocol",
        "method",
        "env",
        "backbone",
        "memory_backbone",
        "embedder",
        "ablation",
        "logger",
        "paths",
        "report",
        "seed_varies",
        "demo",  # the demo's second part (conf/experiment/demo.yaml; memarena.pipeline.demo_recall)
    }
)
ABLATION_KEYS = ("name", "method", "requires")
REPORT_KEYS = ("paper", "tables", "backbones")
MEMORY_BACKBONE_KEYS = ("same_as_agent", "fallback")
# the types of the top-level values (the other top-level keys are groups)
TOP_LEVEL_TYPES: dict[str, Any] = {
    "seed": int,
    "experiment_name": str,
    "seed_varies": dict[str, str],
}
CONF_DIR = Path(__file__).resolve().parents[3] / "conf"


def accepted_keys(target: str) -> tuple[list[str] | None, str]:
    """(the keyword arguments ``target`` takes, or None when it takes any; its dotted name).
    A class with ``Settings`` (a method's :class:`~memarena.core.settings.MethodSettings`)
    takes their fields too."""
    obj = get_object(target)
    name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', target)}"
    if not inspect.isclass(obj):
        return _named(inspect.signature(obj)), name
    keys: list[str] = []
    for init in _inits(obj):
        keys += [k for k in _named(inspect.signature(init), skip_self=True) or [] if k not in keys]
    keys += [k for k in _settings_hints(obj) if k not in keys]
    return keys, name


def _settings_hints(klass: type) -> dict[str, Any]:
    """The field annotations of ``klass.Settings`` when it is a method's settings class."""
    settings = getattr(klass, "Settings", None)
    if isinstance(settings, type) and issubclass(settings, MethodSettings):
        return {f.name: settings.hints().get(f.name, Any) for f in dataclasses.fields(settings)}
    return {}


def _inits(klass: type) -> Iterator[Callable]:
    """The ``__init__`` of each class along the MRO of ``klass``, up to the first that does not
    pass ``**kwargs`` on."""
    for base in klass.__mro__:
        init = base.__dict__.get("__init__")
        if init is None or base is object:
            continue
        yield init
        params = inspect.signature(init).parameters.values()
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return


def _named(sig: inspect.Signature, skip_self: bool = False) -> list[str] | None:
    params = list(sig.parameters.values())[1 if skip_self else 0 :]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if not skip_self and any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in kinds]


# Words a user may reach for instead of a config group's name (``benchmark=pddl``).
GROUP_ALIASES = {
    "benchmark": "env", "task": "env", "dataset": "env", "environment": "env",
    "model": "backbone", "llm": "backbone", "agent": "backbone",
    "memory": "method", "baseline": "method", "embedding": "embedder",
}  # fmt: skip


def alias_hint(key: str, value: str = "...") -> str:
    """`` Did you mean env=pddl? ...`` for a top-level key that names a group by another word."""
    group = GROUP_ALIASES.get(key)
    if group is None:
        return ""
    return (
        f" Did you mean {group}={value}? The {key} is chosen with the {group} group "
        f"({group}=<a file of conf/{group}/>)."
    )


def validate(cfg: DictConfig, choices: Mapping[str, Any] | None = None,
             overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR) -> None:  # fmt: skip
    """Raise one ConfigError for the first key of ``cfg`` that nothing takes. ``choices``
    (Hydra's ``runtime.choices``) and ``overrides`` (the command line) locate its source."""
    for path, key, valid, owner in _problems(cfg):
        full = f"{path}.{key}" if path else key
        source = find_source(full, choices or {}, overrides, conf_dir)
        near = difflib.get_close_matches(key, valid, n=1)
        hint = f" Did you mean {path + '.' if path else ''}{near[0]}?" if near else ""
        hint = (alias_hint(key) if not path else "") or hint
        where = f" (set {source})" if source else ""
        raise ConfigError(
            f"memarena: {full}{where} is not a key of {owner}.{hint} Valid keys: "
            f"{', '.join(valid) or '(none)'}. Fix or remove it; the run did not start."
        )
    if "protocol" in cfg:  # types and ranges of the protocol's values
        ProtocolSettings.from_config(OmegaConf.to_container(cfg.protocol, resolve=True))
    for full, value, hint, takes in _typed_values(cfg):
        if not fits(value, hint):
            source = find_source(full, choices or {}, overrides, conf_dir)
            raise ConfigError(type_message(full, value, hint, takes, source))


def type_message(full: str, value: Any, hint: Any, takes: str, source: str | None) -> str:
    """The one paragraph for a value of the wrong type (the shape of a bad protocol value's)."""
    group = full.split(".", 1)[0]
    fix = (
        f"Fix it {source}" if source
        else f"Fix it on the command line or in conf/{group}/" if "." in full
        else "Fix it on the command line or in conf/config.yaml"
    )  # fmt: skip
    quote = ""
    if isinstance(value, (int, float)) and fits(str(value), hint):  # 2024 for a string
        quote = f" (quote it to pass a string: {full}=\"'{value}'\")"
    return (
        f"memarena: {full}={value!r} must be {describe(hint)} ({takes}got "
        f"{type_name(value)}).{suggestion(value, hint)} {fix}{quote}; the run did not start."
    )


def key_type_error(cfg: DictConfig, key: str, values: Sequence[Any], source: str) -> str | None:
    """The message for the first of ``values`` (a command-line key's values, a sweep's all of
    them) that does not fit the type of ``key`` in ``cfg``, else None. A key that is not a
    top-level value, a protocol key or a key of a target node, and a value that is an
    interpolation, are not checked here."""
    parent_path, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_path) if parent_path else None
    if not parent_path:
        if key not in TOP_LEVEL_TYPES:
            return None
        hint, takes = TOP_LEVEL_TYPES[key], ""
    elif parent_path == "protocol":
        hints = typing.get_type_hints(ProtocolSettings)
        if leaf not in hints:
            return None
        hint, takes = hints[leaf], ""
    elif isinstance(parent, DictConfig) and "_target_" in parent:
        params = param_annotations(str(parent._target_))
        if leaf not in params or leaf in HYDRA_KEYS:
            return None
        hint, text = params[leaf]
        takes = f"{accepted_keys(str(parent._target_))[1]} takes {leaf}: {text}; "
    else:
        return None
    for value in values:
        if isinstance(value, str) and "${" in value:
            continue
        if not fits(value, hint):
            return type_message(key, value, hint, takes, source)
        if parent_path == "protocol":  # its bounds too (a sweep's protocol.max_eval_tasks=1,0)
            try:
                ProtocolSettings(**{leaf: value})
            except ConfigError as err:
                return str(err)
    return None


def _problems(cfg: DictConfig) -> Iterator[tuple[str, str, list[str], str]]:
    """(node path, bad key, valid keys, what owns the node) for each unknown key."""
    top = sorted(TOP_LEVEL - {"hydra"})
    for key in cfg:
        if key not in TOP_LEVEL:
            yield "", str(key), top, "the top level"
    for group in ("method", "env", "backbone", "embedder", "logger"):
        if group in cfg and cfg[group] is not None:
            yield from _target_node(cfg[group], group, INJECTED.get(group, frozenset()))
    if "memory_backbone" in cfg:
        yield from _memory_backbone(cfg.memory_backbone)
    if "protocol" in cfg:
        yield from _plain(cfg.protocol, "protocol", ProtocolSettings.keys(), "protocol")
    if "ablation" in cfg:
        yield from _plain(cfg.ablation, "ablation", list(ABLATION_KEYS), "ablation")
    if "report" in cfg:
        yield from _plain(cfg.report, "report", list(REPORT_KEYS), "report")


def _plain(node: Any, path: str, valid: list[str], owner: str):
    for key in node:
        if key not in valid:
            yield path, str(key), valid, owner


def _target_node(top: DictConfig, group: str, skip: frozenset[str] = frozenset()):
    for path, node, keys, name, injected in _target_nodes(top, group, skip):
        owner = f"{path} ({name})"
        for key in node:
            key = str(key)
            if key in HYDRA_KEYS or keys is None:
                continue
            if key not in keys or key in injected:
                yield path, key, sorted(k for k in keys if k not in injected), owner


def _target_nodes(node: Any, path: str, injected: frozenset[str] = frozenset()):
    """(path, node, the keys its target takes or None, the target's name, injected keys) for
    ``node`` when it has a ``_target_`` and for each such node inside it (``env.wiki``)."""
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return
    keys, name = accepted_keys(str(node._target_))
    yield path, node, keys, name, injected
    for key in node:
        key = str(key)
        if key in HYDRA_KEYS or (keys is not None and key not in keys) or key in injected:
            continue
        value = node._get_node(key)  # the child node, interpolations not resolved
        if isinstance(value, DictConfig) and "_target_" in value:
            yield from _target_nodes(value, f"{path}.{key}")


def _memory_backbone(node: DictConfig):
    if node.get("same_as_agent", False):
        yield from _plain(node, "memory_backbone", list(MEMORY_BACKBONE_KEYS), "memory_backbone")
        if "fallback" in node:
            yield from _target_node(node.fallback, "memory_backbone.fallback")
        return
    plain = {k: node[k] for k in node if k not in MEMORY_BACKBONE_KEYS}
    yield from _target_node(OmegaConf.create(plain), "memory_backbone")


# --------------------------------------------------------------------------------------------
# value types


def _typed_values(cfg: DictConfig) -> Iterator[tuple[str, Any, Any, str]]:
    """(full key, resolved value, the annotation it must fit, "X takes key: hint; ") for each
    top-level value and each key of a target node; values that do not resolve are left out."""
    for key, hint in TOP_LEVEL_TYPES.items():
        if key in cfg:
            ok, value = _resolved(cfg, key)
            if ok:
                yield key, value, hint, ""
    nodes: list[tuple[str, Any, frozenset[str]]] = [
        (g, cfg[g], INJECTED.get(g, frozenset()))
        for g in ("method", "env", "backbone", "embedder", "logger")
        if g in cfg and cfg[g] is not None
    ]
    mb = cfg.get("memory_backbone") if "memory_backbone" in cfg else None
    if isinstance(mb, DictConfig):
        if mb.get("same_as_agent", False):
            nodes.append(("memory_backbone.fallback", mb.get("fallback"), frozenset()))
        else:
            nodes.append(("memory_backbone", mb, frozenset(MEMORY_BACKBONE_KEYS)))
    for group, top, skip in nodes:
        for path, node, _, name, injected in _target_nodes(top, group, skip):
            hints = param_annotations(str(node._target_))
            for key in node:
                key = str(key)
                if key in HYDRA_KEYS or key in injected or key not in hints:
                    continue
                hint, text = hints[key]
                ok, value = _resolved(node, key)
                if ok and not (isinstance(value, dict) and "_target_" in value):
                    yield f"{path}.{key}", value, hint, f"{name} takes {key}: {text}; "


def _resolved(node: DictConfig, key: str) -> tuple[bool, Any]:
    """(True, the plain value of ``node[key]`` with interpolations resolved), or (False, None)
    when it is missing (``???``) or does not resolve here."""
    if OmegaConf.is_missing(node, key):
        return False, None
    try:
        value = node[key]
        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=True)
    except OmegaConfBaseException:
        return False, None
    return True, value


@functools.cache
def param_annotations(target: str) -> dict[str, tuple[Any, str]]:
    """{parameter: (its annotation, evaluated; the annotation as written)} for the keyword
    arguments ``target`` takes (a class: the ``__init__`` along its MRO, as in
    :func:`accepted_keys`; the first class that names a parameter gives its annotation). An
    unannotated parameter, or one whose annotation does not evaluate (a name imported only for
    type checkers), gets ``Any``."""
    obj = get_object(target)
    funcs = list(_inits(obj)) if inspect.isclass(obj) else [obj]
    out: dict[str, tuple[Any, str]] = {}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    for func in funcs:
        params = list(inspect.signature(func).parameters.values())
        for p in params[1:] if inspect.isclass(obj) else params:
            if p.kind in kinds and p.name not in out:
                out[p.name] = _evaluated(p.annotation, func)
    if inspect.isclass(obj):
        for key, hint in _settings_hints(obj).items():
            out.setdefault(key, (hint, written(hint)))
    return out


def _evaluated(annotation: Any, func: Callable) -> tuple[Any, str]:
    if annotation is inspect.Parameter.empty:
        return Any, "(unannotated)"
    if not isinstance(annotation, str):
        return annotation, inspect.formatannotation(annotation)
    namespace = getattr(inspect.unwrap(func), "__globals__", {})
    try:
        return eval(annotation, dict(namespace)), annotation  # noqa: S307 (the code's own text)
    except Exception:  # a name only imported under TYPE_CHECKING: not checked
        return Any, annotation


# --------------------------------------------------------------------------------------------
# where a key came from


def find_source(
    key: str, choices: Mapping[str, Any], overrides: Sequence[str], conf_dir: Path = CONF_DIR
) -> str | None:
    """The command-line override or the config file (``conf/<group>/<option>.yaml``) that
    sets the dotted ``key``; None when neither is known."""
    for override in overrides:
        name = override.split("=", 1)[0].lstrip("+~")
        if name == key:
            return f"on the command line: {override}"
    for choice, option in choices.items():
        if option is None or str(choice).startswith("hydra/"):
            continue
        group, _, package = str(choice).partition("@")
        path = conf_dir / group / f"{option}.yaml"
        if path.is_file() and key in _file_keys(path, package or group.replace("/", ".")):
            return f"in {path.relative_to(conf_dir.parent)}"
    return None


def _file_keys(path: Path, package: str) -> set[str]:
    """Dotted keys a config file sets, under its package (``# @package`` header or group)."""
    head = path.read_text().splitlines()[:5]
    for line in head:
        if line.startswith("# @package"):
            package = line.split(None, 2)[2].strip()
    node = OmegaConf.load(path)
    data = OmegaConf.to_container(node, resolve=False)
    if not isinstance(data, dict):
        return set()
    data.pop("defaults", None)
    prefix = "" if package in ("_global_", "_here_") else package
    return set(_flat(data, prefix))


def _flat(data: dict, prefix: str) -> Iterator[str]:
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        yield name
        if isinstance(value, dict):
            yield from _flat(value, name)
