"""``launcher=slurm`` (hydra-submitit-launcher) with per-backbone resources.

submitit submits a sweep as one job array, and every task of an array gets the same sbatch
resources. Before anything is submitted, :func:`prepare` composes every job, reads what it needs
(:mod:`memarena.launch.resources`) and:

- ``hydra.launcher.dry_run=true``: prints the plan (each resource class: its backbones, jobs and
  the sbatch resources it gets) and the pre-flight of every job (:mod:`memarena.launch.preflight`:
  data, API keys, packages, snapshots); exits 0 when it found nothing, else 2; no Slurm needed;
- a sweep whose jobs need different resources (``backbone=qwen3_4b,qwen3_32b,gpt_4o_mini``: 1, 2
  and 0 GPUs) is refused with one message naming the backbones and printing one command per
  resource class; ``hydra.launcher.gpus_per_node`` set by hand takes every job as it is;
- no ``sbatch`` / ``srun`` on PATH: one message (instead of submitit's traceback);
- else fills ``gpus_per_node`` / ``cpus_per_task`` left null from the class.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence
from typing import Any

from memarena.launch.preflight import launcher_report
from memarena.launch.sweep import PlannedJob, backbones_of, planned_or_stop, resource_classes, stop


def prepare(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> None:
    """Check the sweep and set the array's resources on ``launcher.params`` (see the module)."""
    jobs = planned_or_stop(
        launcher.hydra_context, launcher.config, job_overrides, initial_job_idx, False
    )
    classes = resource_classes(jobs)
    params = launcher.params
    if launcher.dry_run:
        print(dry_run_text(classes, params), flush=True)
        report = launcher_report(  # what run.py's pre-flight refuses a real sweep for
            launcher.hydra_context, launcher.config, job_overrides, initial_job_idx
        ).text()
        if report:
            stop(report)
        raise SystemExit(0)
    fixed = params.get("gpus_per_node")
    if fixed is None and len(classes) > 1:
        stop(split_message(classes, list(launcher.config.hydra.overrides.task)))
    if fixed is not None:
        short = [j for j in jobs if j.resources.gpus > int(fixed)]
        if short:
            stop(
                f"memarena: hydra.launcher.gpus_per_node={fixed}, but {short[0].describe()} "
                f"(backbone={short[0].backbone}) needs {short[0].resources.gpus} GPUs. Leave "
                "gpus_per_node null (each backbone's own resources) or raise it."
            )
    missing = [tool for tool in ("sbatch", "srun") if shutil.which(tool) is None]
    if missing:
        stop(
            f"memarena: launcher=slurm needs Slurm, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH on this machine. Run the sweep on "
            "a Slurm login node, or on this machine with launcher=joblib (parallel processes) or "
            "launcher=submitit_local; hydra.launcher.dry_run=true shows what would be submitted."
        )
    if params.get("gpus_per_node") is None:  # one class here
        params["gpus_per_node"] = max(res.gpus for res in classes)
    if params.get("cpus_per_task") is None:
        params["cpus_per_task"] = max(res.cpus for res in classes)


def _sbatch(res: Any, params: dict[str, Any]) -> str:
    gpus = params.get("gpus_per_node")
    cpus = params.get("cpus_per_task")
    return (
        f"gpus_per_node={res.gpus if gpus is None else gpus} "
        f"cpus_per_task={res.cpus if cpus is None else cpus} "
        f"mem_gb={params.get('mem_gb')} timeout_min={params.get('timeout_min')} "
        f"partition={params.get('partition')}"
    )


def dry_run_text(classes: dict[Any, list[PlannedJob]], params: dict[str, Any]) -> str:
    n = sum(len(v) for v in classes.values())
    lines = [f"memarena: launcher=slurm dry run: {n} jobs, {len(classes)} resource class(es); "
             f"submitit folder {params.get('submitit_folder')}"]  # fmt: skip
    for k, (res, jobs) in enumerate(classes.items(), 1):
        lines.append(
            f"array {k}: {res.label()} per job -> {_sbatch(res, params)}; backbones "
            f"{', '.join(backbones_of(jobs))}; {len(jobs)} jobs"
        )
        lines += [f"  {job.describe()}" for job in jobs]
    if len(classes) > 1 and params.get("gpus_per_node") is None:
        lines.append("(a real submission of this sweep is refused: one command per array)")
    return "\n".join(lines)


def split_message(classes: dict[Any, list[PlannedJob]], task_overrides: list[str]) -> str:
    """One paragraph naming the backbones per resource class and one command per class."""
    kinds = "; ".join(
        f"{', '.join(backbones_of(jobs))}: {res.label()}" for res, jobs in classes.items()
    )
    base = [o for o in task_overrides if o.split("=", 1)[0].lstrip("+~") != "backbone"]
    commands = []
    for jobs in classes.values():
        args = [*base, f"backbone={','.join(backbones_of(jobs))}"]
        commands.append("  python run.py -m " + " ".join(shlex.quote(a) for a in args))
    shared = [b for b in backbones_of([j for js in classes.values() for j in js])
              if sum(b in backbones_of(js) for js in classes.values()) > 1]  # fmt: skip
    note = (
        f" (backbone {', '.join(shared)} needs different resources in different jobs, e.g. with "
        "another memory_backbone: split those by hand)"
        if shared
        else ""
    )
    return (
        "memarena: launcher=slurm submits a sweep as one job array with one set of resources, "
        f"and this sweep's backbones need different ones ({kinds}). Nothing was submitted. Run "
        f"one sweep per resource class{note}:\n" + "\n".join(commands)
        + "\nor set hydra.launcher.gpus_per_node by hand for every job."
    )
