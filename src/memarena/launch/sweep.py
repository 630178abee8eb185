"""A sweep's jobs as a launcher sees them before submitting any: each job's composed config, its
resources (:mod:`memarena.launch.resources`), and the refusals that must come first (two
in-process engines that cannot share the GPUs, a job no node can hold)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from memarena.core import MemarenaError
from memarena.launch.resources import JobResources, check_colocation, job_resources


@dataclass
class PlannedJob:
    num: int  # hydra.job.num
    overrides: list[str]
    config: DictConfig  # the job's composed config (hydra node included)
    resources: JobResources
    backbone: str  # the backbone preset (group choice) of the job

    def describe(self) -> str:
        from hydra.core.utils import filter_overrides

        return f"#{self.num} {' '.join(filter_overrides(self.overrides))}"


# override keys that never change a job's backbones (what its resources are read from)
_NOT_RESOURCES = ("seed", "method", "env", "protocol", "logger", "paths", "embedder",
                  "experiment_name", "report")  # fmt: skip


def _resource_key(overrides: Sequence[str]) -> tuple[str, ...]:
    def keep(o: str) -> bool:
        key = o.split("=", 1)[0].lstrip("+~")
        return key.split(".", 1)[0].split("@", 1)[0] not in _NOT_RESOURCES

    return tuple(sorted(o for o in overrides if keep(o)))


def plan_jobs(
    hydra_context: Any,
    config: DictConfig,
    job_overrides: Sequence[Sequence[str]],
    first: int,
    each: bool = True,
) -> list[PlannedJob]:
    """Compose the jobs of the batch (as the launcher would in the job) and read what each
    needs. ``each=False``: compose one job per distinct set of backbone-related overrides (a
    63-job table needs 3 compositions, not 63) and give the others its config. A job refused by
    :func:`check_colocation` stops the sweep here, before submission."""
    jobs, seen = [], {}
    for offset, overrides in enumerate(job_overrides):
        num = first + offset
        key = _resource_key(overrides)
        if each or key not in seen:
            sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.num = num
                sweep_config.hydra.job.id = f"job_id_for_{num}"
            check_colocation(sweep_config)
            choice = sweep_config.hydra.runtime.choices.get("backbone") or "?"
            seen[key] = (sweep_config, job_resources(sweep_config), str(choice))
        sweep_config, resources, choice = seen[key]
        jobs.append(PlannedJob(num, list(overrides), sweep_config, resources, choice))
    return jobs


# the hydra keys a job's process reads before Hydra's own resolvers exist there (the defaults
# hold ${now:...}: resolved in a worker, each would name its own time, or fail without `now`)
JOB_DIRS = ("hydra.sweep.dir", "hydra.sweep.subdir", "hydra.run.dir")


def pin_dirs(config: DictConfig) -> dict[str, str]:
    """Resolve the sweep and run directories of ``config`` here, in the launching process, and
    write them back as plain strings: a job shipped to another process or machine (a Ray task)
    finds the same folders without any resolver. Returns them."""
    values = {key: str(OmegaConf.select(config, key, throw_on_missing=True)) for key in JOB_DIRS}
    with read_write(config), open_dict(config):
        for key, value in values.items():
            OmegaConf.update(config, key, value, merge=False)
    return values


def resource_classes(jobs: Sequence[PlannedJob]) -> dict[JobResources, list[PlannedJob]]:
    out: dict[JobResources, list[PlannedJob]] = {}
    for job in jobs:
        out.setdefault(job.resources, []).append(job)
    return dict(sorted(out.items()))


def backbones_of(jobs: Sequence[PlannedJob]) -> list[str]:
    return list(dict.fromkeys(job.backbone for job in jobs))


def stop(message: str, status: int = 2) -> None:
    """End the launcher with one message (no traceback): a MemarenaError's text, or ``message``."""
    text = message if message.startswith("memarena:") else f"memarena: {message}"
    print(text, file=sys.stderr)
    sys.exit(status)


def planned_or_stop(*args: Any) -> list[PlannedJob]:
    """:func:`plan_jobs`, a config refusal printed as its one message (exit status 2)."""
    try:
        return plan_jobs(*args)
    except MemarenaError as exc:
        stop(str(exc))
        raise  # not reached
