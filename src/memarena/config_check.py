"""Turn config mistakes into one readable paragraph before Hydra starts.

``python run.py method=nope`` or ``protocol.concurency=4`` should end with a message that names
the bad choice or key and lists what is valid, not with a traceback. We parse the command-line
overrides with Hydra's own parser, check every group choice (all values of a sweep) against the
files in ``conf/``, then compose once to catch unknown keys.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"  # repo checkout (editable install)


# Config groups inside another group's folder (chosen with `env/wiki=local`; `env.wiki=local`
# is accepted as a shorthand). Other sub-folders hold plain choices (`ablation=memco/local_only`).
NESTED_GROUPS = ("env/wiki",)


def group_options(conf_dir: Path, group: str) -> list[str]:
    """Options of a config group: yaml files under conf/<group>/, nested ones as a/b."""
    base = conf_dir / group
    if not base.is_dir():
        return []
    nested = [conf_dir / g for g in NESTED_GROUPS if g.startswith(group + "/")]
    return sorted(
        str(p.relative_to(base).with_suffix(""))
        for p in base.rglob("*.yaml")
        if not any(p.is_relative_to(n) for n in nested)
    )


DROPPABLE_GROUPS = ("experiment",)  # groups whose default `<group>=null` drops


def expand_group_shorthand(argv: list[str]) -> list[str]:
    """``env.wiki=local`` -> ``env/wiki=local`` for the nested groups (plain keys unchanged);
    ``experiment=null`` -> ``~experiment`` (Hydra's spelling for dropping an optional group's
    default; ``null`` alone is refused by Hydra)."""
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        group = key.replace(".", "/")
        if eq and group in NESTED_GROUPS and not value.lstrip().startswith("{"):
            arg = f"{group}={value}"
        elif eq and key in DROPPABLE_GROUPS and value.strip() == "null":
            arg = f"~{key}"
        out.append(arg)
    return out


def config_groups(conf_dir: Path) -> list[str]:
    top = [p.name for p in conf_dir.iterdir() if p.is_dir()]
    return sorted([*top, *(g for g in NESTED_GROUPS if (conf_dir / g).is_dir())])


def _fmt(options: list[str]) -> str:
    return ", ".join(options) if options else "(none)"


def _check_choice(conf_dir: Path, group: str, value: str) -> str | None:
    options = group_options(conf_dir, group)
    if value in options or value in ("null", "None"):
        return None
    near = difflib.get_close_matches(value, options, n=1)
    hint = f" Did you mean {group}={near[0]}?" if near else ""
    return (
        f"memarena: {group}={value} is not a known {group}.{hint} Valid choices: "
        f"{_fmt(options)}. Each choice is a file in conf/{group}/; add one there to create "
        "a new option."
    )


def _unknown_key_message(cfg: DictConfig, key: str) -> str:
    parent_path, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_path) if parent_path else cfg
    if not isinstance(parent, DictConfig):
        return (
            f"memarena: {key} is not a config key ({parent_path or 'the top level'} holds no keys)."
        )
    keys = sorted(str(k) for k in parent.keys() if not str(k).startswith("_"))
    near = difflib.get_close_matches(leaf, keys, n=1)
    hint = f" Did you mean {parent_path + '.' if parent_path else ''}{near[0]}?" if near else ""
    where = parent_path or "the top level"
    return (
        f"memarena: {key} is not a config key.{hint} Valid keys under {where}: {_fmt(keys)}. "
        f"To add a new key on purpose, write +{key}=VALUE; `python run.py --cfg job` prints "
        "the whole config."
    )


def check_overrides(overrides: list[str], conf_dir: Path = CONF_DIR) -> str | None:
    """Return a one-paragraph error for bad overrides, or None when they compose."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        return f"memarena: could not parse the command line: {exc}".replace("\n", " ")
    groups = set(config_groups(conf_dir))
    first_values: list[str] = []
    for ov in parsed:
        key = ov.key_or_group
        if ov.is_sweep_override():
            values = [str(v) for v in ov.sweep_string_iterator()]
        else:
            values = [ov.get_value_element_as_str()] if ov.value() is not None else ["null"]
        if key in groups and not ov.is_delete():
            for value in values:
                message = _check_choice(conf_dir, key, value)
                if message:
                    return message
        prefix = ov.get_key_element()
        first_values.append(f"{prefix}={values[0]}" if not ov.is_delete() else ov.input_line)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name="config", overrides=first_values, return_hydra_config=True)
        return _strict_keys(cfg, first_values, conf_dir)
    except (HydraException, OmegaConfBaseException) as exc:
        text = " ".join(f"{exc} {exc.__cause__ or ''}".split())
        bad = _missing_key(exc)
        if bad is not None:
            return _unknown_key_message(_group_only_cfg(conf_dir, first_values), bad)
        return "memarena: the configuration does not compose: " + " ".join(text.split())
    finally:
        GlobalHydra.instance().clear()
    return None


def _missing_key(exc: BaseException) -> str | None:
    """The full key of a "not in struct" error in ``exc``'s chain (OmegaConf names it), else
    None. Read from the exception, never matched against the message text."""
    cause: BaseException | None = exc
    while cause is not None:
        key = getattr(cause, "full_key", None)
        if key and "not in struct" in str(cause):
            return str(key)
        cause = cause.__cause__
    return None


def _strict_keys(cfg: DictConfig, overrides: list[str], conf_dir: Path) -> str | None:
    """Every key of the composed config must be one its target takes (see
    :mod:`memarena.pipeline.validate`); the message names the key and where it was set."""
    from memarena.core import ConfigError
    from memarena.pipeline.validate import validate

    choices = dict(cfg.hydra.runtime.choices)
    body = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    try:
        validate(body, choices, overrides, conf_dir)
    except ConfigError as err:
        return str(err)
    return None


def _group_only_cfg(conf_dir: Path, overrides: list[str]) -> DictConfig:
    """The config composed with only the group choices (to list the valid keys)."""
    groups = set(config_groups(conf_dir))
    keep = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") in groups]
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
        return compose(config_name="config", overrides=keep)
