"""Turn config mistakes into one readable paragraph before Hydra starts.

``python run.py method=nope`` or ``protocol.concurency=4`` should end with a message that names
the bad choice or key and lists what is valid, not with a traceback. We parse the command-line
overrides with Hydra's own parser, check every group choice (all values of a sweep) against the
files in ``conf/``, then compose once to catch unknown keys and values of the wrong type
(:mod:`memarena.pipeline.validate`; ``seed=abc``, ``method.threshold=abc``); the command-line
values the composed job does not hold (a sweep's other values, the keys of other swept group
choices' targets) are type-checked against each job's target too.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.core import ConfigError
from memarena.pipeline.validate import alias_hint, key_type_error, validate

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
    """memarena's config groups: the folders of ``conf/`` except ``hydra/`` (Hydra's own groups,
    ``hydra/job_logging`` and the like, which Hydra checks itself)."""
    top = [p.name for p in conf_dir.iterdir() if p.is_dir() and p.name != "hydra"]
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


def _unknown_key_message(cfg: DictConfig, key: str, value: str = "...") -> str:
    parent_path, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_path) if parent_path else cfg
    if not isinstance(parent, DictConfig):
        return (
            f"memarena: {key} is not a config key ({parent_path or 'the top level'} holds no keys)."
        )
    keys = sorted(str(k) for k in parent.keys() if not str(k).startswith("_"))
    near = difflib.get_close_matches(leaf, keys, n=1)
    hint = f" Did you mean {parent_path + '.' if parent_path else ''}{near[0]}?" if near else ""
    if not parent_path:  # benchmark=pddl: a group's name in other words
        hint = alias_hint(leaf, value) or hint
    where = parent_path or "the top level"
    return (
        f"memarena: {key} is not a config key.{hint} Valid keys under {where}: {_fmt(keys)}. "
        f"To add a new key on purpose, write +{key}=VALUE; `python run.py --cfg job` prints "
        "the whole config."
    )


@dataclass
class Precheck:
    """What :func:`plan_overrides` found: an error (the run stops), the overrides rewritten for
    Hydra (``method.k_local=3`` -> ``++method.k_local=3`` when only some jobs of a sweep have
    the key) and notes to print before the run starts."""

    error: str | None = None
    rewrites: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sweep_params: dict[str, Any] = field(default_factory=dict)  # the experiment's sweeper params


def check_overrides(overrides: list[str], conf_dir: Path = CONF_DIR) -> str | None:
    """Return a one-paragraph error for bad overrides, or None when they compose."""
    return plan_overrides(overrides, conf_dir, multirun=True).error


def plan_overrides(overrides: list[str], conf_dir: Path = CONF_DIR, multirun: bool = False):
    """Check the command line: group choices against ``conf/``, every key override against the
    config of each combination of swept group choices (by key path in the composed config, not
    by matching error text), then compose the first job once and check its keys strictly."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException as exc:
        return Precheck(f"memarena: could not parse the command line: {exc}".replace("\n", " "))
    groups = set(config_groups(conf_dir))
    group_values: dict[str, list[str]] = {}
    key_overrides: list[tuple[Override, str]] = []
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
                    return Precheck(message)
            group_values[key] = values
        elif ov.is_delete() and key in groups:
            group_values[key] = ["~"]
        elif not (ov.is_add() or ov.is_force_add() or ov.is_delete()):
            key_overrides.append((ov, f"{key}={values[0]}"))
        prefix = ov.get_key_element()
        first_values.append(f"{prefix}={values[0]}" if not ov.is_delete() else ov.input_line)
    from memarena.launch.preflight import launcher_missing

    for choice in group_values.get("launcher", []):
        if message := launcher_missing(choice):
            return Precheck(message)
    plan = Precheck()
    GlobalHydra.instance().clear()
    try:
        # one group-only config per combination of swept choices, only when keys need them
        combos = _group_combinations(conf_dir, group_values) if key_overrides else []
        partial: set[str] = set()
        for ov, first in key_overrides:
            error, note = _key_in_jobs(ov.key_or_group, combos, first.split("=", 1)[1])
            if error:
                return Precheck(error)
            if note:
                if not multirun:  # cannot happen without sweeps, which need -m
                    return Precheck(note)
                plan.rewrites[ov.input_line] = "++" + ov.input_line
                plan.notes.append(note)
                partial.add(first)
        checked = [o for o in first_values if o not in partial]
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name="config", overrides=checked, return_hydra_config=True)
        plan.error = _strict_keys(cfg, checked, conf_dir) or _sweep_types(key_overrides, combos)
        if not multirun and plan.error is None:
            plan.error = _sweep_without_multirun(cfg, overrides, {ov.key_or_group for ov in parsed})
        experiments = group_values.get("experiment", [])
        if multirun and plan.error is None and len(experiments) > 1:
            plan.error = _swept_experiments_sweeping(conf_dir, experiments)
        # with experiment itself swept, Hydra applies no experiment's own sweep
        params = None if len(experiments) > 1 else cfg.hydra.sweeper.get("params")
        plan.sweep_params = dict(OmegaConf.to_container(params)) if params else {}
        if multirun and plan.error is None:
            jobs = [plan.rewrites.get(o, o) for o in overrides]
            plan.error = duplicate_cells(jobs, params, conf_dir)
    except (HydraException, OmegaConfBaseException) as exc:
        text = " ".join(f"{exc} {exc.__cause__ or ''}".split())
        bad = _missing_key(exc)
        if bad is not None:
            return Precheck(_unknown_key_message(_group_only_cfg(conf_dir, first_values), bad))
        return Precheck("memarena: the configuration does not compose: " + text)
    finally:
        GlobalHydra.instance().clear()
    return plan


def _swept_experiments_sweeping(conf_dir: Path, experiments: list[str]) -> str | None:
    """The refusal of ``-m experiment=a,b`` when a or b sweeps itself (``hydra.sweeper.params``):
    Hydra reads the sweep from the command line only when ``experiment`` is one of its keys, so
    each job would run its experiment's first cell alone, silently."""
    sweeping = []
    for name in experiments:
        if name in ("null", "~"):
            continue
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(
                config_name="config", overrides=[f"experiment={name}"], return_hydra_config=True
            )
        params = cfg.hydra.sweeper.get("params") or {}
        if params:
            sweeping.append(f"{name} ({', '.join(str(k) for k in params)})")
        GlobalHydra.instance().clear()
    if not sweeping:
        return None
    return (
        "memarena: -m experiment=" + ",".join(experiments) + " sweeps experiments that sweep "
        f"themselves: {'; '.join(sweeping)}. With experiment itself swept, Hydra ignores each "
        "experiment's hydra.sweeper.params, so each job would run one cell of its experiment "
        "(its defaults) instead of its sweep. Run each experiment as its own sweep "
        "(python run.py -m experiment=<name>), one after the other; the run did not start."
    )


def sweep_jobs(overrides: list[str], params: Mapping[str, Any] | None) -> list[list[str]]:
    """The overrides of each job of the sweep, as Hydra's basic sweeper lists them: the
    experiment's ``hydra.sweeper.params`` then the command line (a later key replaces an
    earlier one), the product of their values in order. [] for a sweep it cannot list (an
    interval, a range of another sweeper)."""
    return sweep_cells(overrides, params)[0]


def sweep_cells(
    overrides: list[str], params: Mapping[str, Any] | None
) -> tuple[list[list[str]], set[str]]:
    """(:func:`sweep_jobs`, the keys swept: those that list values)."""
    args = [f"{k}={v}" for k, v in (params or {}).items()] + list(overrides)
    try:
        parsed = OverridesParser.create().parse_overrides(args)
        (jobs,) = BasicSweeper.split_arguments(parsed, None)
    except (HydraException, ValueError):
        return [], set()
    swept = {ov.get_key_element(): ov.is_sweep_override() for ov in parsed}
    return jobs, {k for k, v in swept.items() if v}


def duplicate_cells(
    overrides: list[str], params: Mapping[str, Any] | None, conf_dir: Path = CONF_DIR
) -> str | None:
    """The refusal of a sweep two of whose jobs would write one run folder (``-m seed=0,0``, or
    two values of a key the folder does not name): the second job would rerun the first's cell
    (the basic launcher) or fail on its lock (joblib, Ray, Slurm). Each job's folder is the
    pipeline's :func:`~memarena.pipeline.build.run_dir` of its composed config (one
    composition per job less its seed; the seed is read from the job's overrides)."""
    from memarena.launch.compose import compose_job
    from memarena.pipeline.adhoc import adhoc_name, is_adhoc
    from memarena.pipeline.build import run_dir

    jobs, swept = sweep_cells(overrides, params)
    if len(jobs) < 2:
        return None
    seen: dict[Path, list[str]] = {}
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
        for job in jobs:
            cfg = compose_job(job, conf_dir)
            if is_adhoc(job):  # the name the job gives itself (memarena.cli.name_adhoc_run)
                name = adhoc_name(cfg.experiment_name, job)
                cfg = OmegaConf.merge(cfg, {"experiment_name": name})
            folder = run_dir(cfg)
            if folder in seen:
                first, second = (" ".join(o for o in j if o.split("=", 1)[0] in swept)
                                 for j in (seen[folder], job))  # fmt: skip
                return (
                    f"memarena: the sweep runs one cell twice: the jobs {first!r} and "
                    f"{second!r} would both write "
                    f"{folder}. The second would rerun the first's cell (or fail on its lock). "
                    "Give each value once (seed=0,0 -> seed=0,1), or give the jobs different "
                    "experiment_name / ablation values; the run did not start."
                )
            seen[folder] = job
    return None


MAX_COMBINATIONS = 64  # swept group choices checked one by one (the rest share their keys)


def _group_combinations(
    conf_dir: Path, group_values: dict[str, list[str]]
) -> list[tuple[str, DictConfig]]:
    """(``method=memco``: the swept choices, its group-only config) for each combination of
    the group choices on the command line (the experiment's own choices apply under each)."""
    names = list(group_values)
    out = []
    combos = itertools.product(*(group_values[n] for n in names))
    for values in itertools.islice(combos, MAX_COMBINATIONS):
        picks = [f"~{n}" if v == "~" else f"{n}={v}" for n, v in zip(names, values, strict=True)]
        swept = [p for p, n in zip(picks, names, strict=True) if len(group_values[n]) > 1]
        out.append((" ".join(swept), _group_only_cfg(conf_dir, picks)))
    return out


def has_key(cfg: DictConfig, key: str) -> bool:
    """Whether the dotted ``key`` is a node of ``cfg`` (a null value counts)."""
    parent_path, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_path) if parent_path else cfg
    return isinstance(parent, DictConfig) and leaf in parent


def _key_in_jobs(
    key: str, combos: list[tuple[str, DictConfig]], value: str = "..."
) -> tuple[str | None, str | None]:
    """(error when no job's config has ``key``, note when only some have it)."""
    having = [name for name, cfg in combos if has_key(cfg, key)]
    if not having:  # name the job whose keys hold a close match (a sweep's first may have none)
        messages = [_unknown_key_message(cfg, key, value) for _, cfg in combos]
        return next((m for m in messages if "Did you mean" in m), messages[0]), None
    if len(having) == len(combos):
        return None, None
    lacking = [name for name, cfg in combos if not has_key(cfg, key)]
    return None, (
        f"memarena: {key} applies only to the jobs with {' / '.join(having)}; the jobs with "
        f"{' / '.join(lacking)} do not have the key and run without it."
    )


def _sweep_types(
    key_overrides: list[tuple[Override, str]], combos: list[tuple[str, DictConfig]]
) -> str | None:
    """The type error of a command-line value that the first job does not show: a sweep's
    other values (``seed=0,abc``), or a key of the jobs of other group choices
    (``method=none,memco method.threshold=abc``), checked against each job's target."""
    for ov, _ in key_overrides:
        try:
            values = list(ov.sweep_iterator()) if ov.is_sweep_override() else [ov.value()]
        except Exception:  # a sweep the parser cannot list (an optuna interval): not checked
            continue
        for _, combo in combos:
            error = key_type_error(
                combo, ov.key_or_group, values, f"on the command line: {ov.input_line}"
            )
            if error:
                return error
    return None


def _sweep_without_multirun(cfg: DictConfig, overrides: list[str], given: set[str]) -> str | None:
    """The refusal of a sweep experiment (its file sets ``hydra.sweeper.params``) run without
    ``-m`` whose one job would not be a cell of the sweep (``experiment=pddl_baselines`` alone
    runs method=memco, which is not in ``method: none,icl``) yet would be written under the
    experiment's name. A swept key set on the command line is the user's cell; every other
    swept key must hold one of the sweep's values."""
    params = OmegaConf.select(cfg, "hydra.sweeper.params")
    if not params:
        return None
    choices = cfg.hydra.runtime.choices
    outside = []
    for key, value in params.items():
        key = str(key)
        if key in given:
            continue
        current = choices.get(key) if key in choices else OmegaConf.select(cfg, key)
        values = _sweep_values(key, value)
        if values is not None and str(current) not in values:
            outside.append(f"{key}={current} (the sweep's: {','.join(values)})")
    if not outside:
        return None
    experiment = choices.get("experiment")
    args = " ".join(overrides)
    first = " ".join(
        f"{k}={(_sweep_values(str(k), v) or [str(v)])[0]}"
        for k, v in params.items()
        if str(k) not in given
    )
    return (
        f"memarena: experiment={experiment} is a sweep, and without -m its one job would run "
        f"{'; '.join(outside)}: a cell outside the sweep. Run the sweep: python run.py -m {args}"
        f"   or one of its cells: python run.py {args} {first}"
    )


def _sweep_values(key: str, value: object) -> list[str] | None:
    """The values a sweeper param lists (``none,icl`` -> [none, icl]); None for a sweep the
    parser cannot list (an interval)."""
    try:
        (ov,) = OverridesParser.create().parse_overrides([f"{key}={value}"])
        if ov.is_sweep_override():
            return [str(v) for v in ov.sweep_string_iterator()]
        return [ov.get_value_element_as_str()]
    except Exception:  # noqa: BLE001 (an optuna interval, a range: not listed)
        return None


def _missing_key(exc: BaseException) -> str | None:
    """The full key of an unknown-key error in ``exc``'s chain (OmegaConf's ConfigKeyError /
    ConfigAttributeError name it in ``full_key``), else None."""
    cause: BaseException | None = exc
    while cause is not None:
        key = getattr(cause, "full_key", None)
        if key and isinstance(cause, (ConfigKeyError, ConfigAttributeError)):
            return str(key)
        cause = cause.__cause__
    return None


def _strict_keys(cfg: DictConfig, overrides: list[str], conf_dir: Path) -> str | None:
    """Every key of the composed config must be one its target takes (see
    :mod:`memarena.pipeline.validate`); the message names the key and where it was set."""
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
