"""Finish what failed, only: a sweep's unfinished jobs and the one command that reruns them.

A sweep's jobs are the product of its overrides (the experiment's ``hydra.sweeper.params`` and
the command line's, expanded as Hydra's basic sweeper numbers them, from ``<sweep
dir>/multirun.yaml``), or the list a rerun was given (``<sweep dir>/planned_jobs.json``). Each job
that ended wrote ``jobs/<num>.json`` (a result) or ``failed_jobs/<num>.json`` (memarena.cli); a job
with neither never ended (the sweep was stopped, a node was lost, an exception other than a
MemarenaError stopped the sweep). Both kinds are the sweep's unfinished jobs.

``hydra/sweeper=memarena_rerun hydra.sweeper.sweep_dir=<sweep dir>`` added to the sweep's command
runs only those, on the command's launcher, in a new sweep folder (each run resumes from the
records it left, memarena.pipeline); the sweep's summary prints that command
(:func:`rerun_command`)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.core import ConfigError

PLANNED = "planned_jobs.json"
SWEEPER = "memarena_rerun"


@dataclass
class Unfinished:
    num: int
    overrides: list[str]
    why: str  # "failed" (its error: failed_jobs/<num>.json) or "never ended"

    def describe(self) -> str:
        return f"#{self.num} {' '.join(self.overrides)} ({self.why})"


def expand(params: dict[str, Any], arguments: list[str]) -> list[list[str]]:
    """The jobs of a sweep, numbered as Hydra's basic sweeper numbers them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = [f"{k}={v}" for k, v in (params or {}).items()] + list(arguments)
    parsed = OverridesParser.create().parse_overrides(given)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def planned(sweep_dir: Path) -> list[list[str]]:
    """Every job of the sweep in ``sweep_dir``, in job order."""
    listed = sweep_dir / PLANNED
    if listed.is_file():
        return [list(job) for job in json.loads(listed.read_text())]
    saved = sweep_dir / "multirun.yaml"
    if not saved.is_file():
        raise ConfigError(
            f"{sweep_dir} is not a sweep folder (no multirun.yaml): give "
            "hydra.sweeper.sweep_dir the folder a `python run.py -m ...` sweep wrote (its "
            "summary prints it), e.g. outputs/multiruns/<date>_<time>."
        )
    cfg = OmegaConf.load(saved)
    node = OmegaConf.select(cfg, "hydra.sweeper.params")
    params = OmegaConf.to_container(node) if node is not None else {}
    task = list(OmegaConf.select(cfg, "hydra.overrides.task") or [])
    return expand(params, task)  # type: ignore[arg-type]


def unfinished(sweep_dir: Path) -> list[Unfinished]:
    """The jobs of the sweep in ``sweep_dir`` that failed or never ended, in job order."""
    from memarena.launch.records import FAILED_JOBS, JOBS

    out = []
    for num, overrides in enumerate(planned(sweep_dir)):
        failed = sweep_dir / FAILED_JOBS / f"{num}.json"
        if failed.is_file():
            out.append(Unfinished(num, overrides, "failed"))
        elif not (sweep_dir / JOBS / f"{num}.json").is_file():
            out.append(Unfinished(num, overrides, "never ended"))
    return out


def rerun_command(config: DictConfig, sweep_dir: Path) -> str:
    """The sweep's own command (its overrides and Hydra overrides, its folder left to the
    default) with the rerun sweeper pointed at ``sweep_dir``."""
    task = list(OmegaConf.select(config, "hydra.overrides.task") or [])
    hydra = [
        o for o in OmegaConf.select(config, "hydra.overrides.hydra") or []
        if o.split("=", 1)[0].lstrip("+~") not in (
            "hydra.sweep.dir", "hydra.sweep.subdir", "hydra/sweeper", "hydra.sweeper.sweep_dir",
            "hydra.mode")
    ]  # fmt: skip
    args = [
        *task,
        *hydra,
        f"hydra/sweeper={SWEEPER}",
        f"hydra.sweeper.sweep_dir={sweep_dir.absolute()}",
    ]
    return "python run.py -m " + " ".join(shlex.quote(str(a)) for a in args)


def unfinished_text(config: DictConfig, sweep_dir: Path) -> str:
    """The summary's lines on unfinished jobs: each one, and the command that reruns only
    them; "" when every job ended with a result."""
    try:
        jobs = unfinished(sweep_dir)
    except Exception as exc:  # the summary still prints the table
        return f"memarena: could not list the unfinished jobs of {sweep_dir}: {exc}"
    if not jobs:
        return ""
    never = sum(j.why == "never ended" for j in jobs)
    lines = [f"memarena: {len(jobs)} job(s) unfinished ({len(jobs) - never} failed, {never} "
             "never ended):"]  # fmt: skip
    lines += [f"  {j.describe()}" for j in jobs]
    lines.append("rerun only these (each run resumes from its records):")
    lines.append(f"  {rerun_command(config, sweep_dir)}")
    return "\n".join(lines)


def rerun_jobs(sweeper: Any, arguments: list[str]) -> list:
    """The body of ``hydra/sweeper=memarena_rerun``: launch the unfinished jobs of
    ``sweeper.sweep_dir`` (in job order, in batches of ``max_batch_size``), recording them as
    this sweep's ``planned_jobs.json`` so that its own summary lists what it leaves."""
    import logging

    from memarena.launch.sweep import stop

    log = logging.getLogger(__name__)
    old = Path(str(sweeper.sweep_dir))
    try:
        jobs = unfinished(old)
    except ConfigError as exc:
        stop(str(exc))
    sweep_dir = Path(str(sweeper.config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if sweep_dir.resolve() == old.resolve():
        stop(f"memarena: the rerun of {old} would write into the same folder: leave "
             "hydra.sweep.dir to its default or give another one.")  # fmt: skip
    OmegaConf.save(sweeper.config, sweep_dir / "multirun.yaml")
    (sweep_dir / PLANNED).write_text(json.dumps([j.overrides for j in jobs], indent=1) + "\n")
    total = len(planned(old))
    log.info("rerunning %d of the %d jobs of %s (the others ended with a result):", len(jobs),
             total, old)  # fmt: skip
    for k, job in enumerate(jobs):
        log.info("\tnew #%d = %s", k, job.describe())
    size = sweeper.max_batch_size or len(jobs) or 1
    returns, first = [], 0
    while first < len(jobs):
        batch = [j.overrides for j in jobs[first : first + size]]
        sweeper.validate_batch_is_legal(batch)
        results = sweeper.launcher.launch(batch, initial_job_idx=first)
        for r in results:
            _ = r.return_value  # an exception other than a MemarenaError stops it (Hydra's way)
        returns.append(results)
        first += len(batch)
    return returns
