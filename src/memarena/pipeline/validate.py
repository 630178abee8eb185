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
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.utils import get_object
from omegaconf import DictConfig, OmegaConf

from memarena.core import ConfigError
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
    }
)
ABLATION_KEYS = ("name", "method", "requires")
REPORT_KEYS = ("paper", "tables")
MEMORY_BACKBONE_KEYS = ("same_as_agent", "fallback")
CONF_DIR = Path(__file__).resolve().parents[3] / "conf"


def accepted_keys(target: str) -> tuple[list[str] | None, str]:
    """(the keyword arguments ``target`` takes, or None when it takes any; its dotted name)."""
    obj = get_object(target)
    name = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', target)}"
    if not inspect.isclass(obj):
        return _named(inspect.signature(obj)), name
    keys: list[str] = []
    for klass in obj.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        sig = inspect.signature(init)
        keys += [k for k in _named(sig, skip_self=True) or [] if k not in keys]
        if not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            return keys, name
    return keys, name


def _named(sig: inspect.Signature, skip_self: bool = False) -> list[str] | None:
    params = list(sig.parameters.values())[1 if skip_self else 0 :]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if not skip_self and any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in kinds]


def validate(cfg: DictConfig, choices: Mapping[str, Any] | None = None,
             overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR) -> None:  # fmt: skip
    """Raise one ConfigError for the first key of ``cfg`` that nothing takes. ``choices``
    (Hydra's ``runtime.choices``) and ``overrides`` (the command line) locate its source."""
    for path, key, valid, owner in _problems(cfg):
        full = f"{path}.{key}" if path else key
        source = find_source(full, choices or {}, overrides, conf_dir)
        near = difflib.get_close_matches(key, valid, n=1)
        hint = f" Did you mean {path + '.' if path else ''}{near[0]}?" if near else ""
        where = f" (set {source})" if source else ""
        raise ConfigError(
            f"memarena: {full}{where} is not a key of {owner}.{hint} Valid keys: "
            f"{', '.join(valid) or '(none)'}. Fix or remove it; the run did not start."
        )
    if "protocol" in cfg:  # types and ranges of the protocol's values
        ProtocolSettings.from_config(OmegaConf.to_container(cfg.protocol, resolve=True))


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


def _target_node(node: DictConfig, path: str, injected: frozenset[str] = frozenset()):
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return
    keys, name = accepted_keys(str(node._target_))
    owner = f"{path} ({name})"
    for key in node:
        key = str(key)
        if key in HYDRA_KEYS:
            continue
        value = node[key] if not OmegaConf.is_missing(node, key) else None
        if keys is not None and (key not in keys or key in injected):
            yield path, key, sorted(k for k in keys if k not in injected), owner
        elif isinstance(value, DictConfig) and "_target_" in value:
            yield from _target_node(value, f"{path}.{key}")


def _memory_backbone(node: DictConfig):
    if node.get("same_as_agent", False):
        yield from _plain(node, "memory_backbone", list(MEMORY_BACKBONE_KEYS), "memory_backbone")
        if "fallback" in node:
            yield from _target_node(node.fallback, "memory_backbone.fallback")
        return
    plain = {k: node[k] for k in node if k not in MEMORY_BACKBONE_KEYS}
    yield from _target_node(OmegaConf.create(plain), "memory_backbone")


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
