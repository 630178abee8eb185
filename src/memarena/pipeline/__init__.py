"""acquisition -> memory snapshot -> evaluation -> metrics, for any method x env x backbone.

One module per stage: :mod:`~memarena.pipeline.build` checks the config and builds the parts,
:mod:`~memarena.pipeline.acquire` builds the memory on the train split and writes the
snapshot, :mod:`~memarena.pipeline.evaluate` runs the test split (with
:mod:`~memarena.pipeline.learning` when the memory keeps learning), and
:mod:`~memarena.pipeline.summarize` writes metrics and usage. The pipeline never branches on
method or env names; it talks to them through the contracts in :mod:`memarena.core`.

Runs resume: every finished episode is on disk (``EpisodeRecord`` lines), and a rerun with the
same run directory continues where the last one stopped, replaying the memory's updates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.agent import ExpertPolicy, Policy
from memarena.pipeline.acquire import acquire
from memarena.pipeline.build import Parts, build, build_part, close_parts, run_dir
from memarena.pipeline.ending import (
    StopOnSignals,
    Terminated,
    close_invocation,
    disk_full,
    disk_full_error,
    quietly,
)
from memarena.pipeline.evaluate import evaluate
from memarena.pipeline.live import LiveMetrics
from memarena.pipeline.protocol import ProtocolSettings
from memarena.pipeline.summarize import acquisition_cost, check_errors, metrics_of, usage_of
from memarena.pipeline.tasks import cap_tasks, cap_warning, chunks
from memarena.results import store as files
from memarena.results.loggers import run_id_for
from memarena.results.records import latest
from memarena.results.run_log import run_log_in

__all__ = [
    "Parts",
    "ProtocolSettings",
    "Terminated",
    "acquire",
    "acquisition_cost",
    "build",
    "build_part",
    "cap_tasks",
    "chunks",
    "evaluate",
    "run",
    "run_dir",
]

log = logging.getLogger(__name__)


def run(
    cfg: DictConfig, choices: Mapping[str, Any] | None = None, overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """Run one (experiment, env, method, backbone, seed) cell and return its metrics.
    ``choices`` / ``overrides`` (Hydra's) let a config error name the file it came from.

    However the run ends, from the moment it holds its run directory: ``run_info.json`` closes
    this invocation with its status, the logger is finished, the models are closed and the
    temporary files of failed writes are removed. SIGTERM / SIGHUP (in the main thread) end it
    like Ctrl-C, raising :class:`~memarena.pipeline.ending.Terminated`; a full disk ends it
    with one :class:`~memarena.pipeline.ending.DiskFullError` naming the folder and the fix."""
    t0 = time.perf_counter()
    protocol = cfg.protocol
    caps = (protocol.max_train_tasks, protocol.max_eval_tasks)
    if caps[1] is not None or caps[0] not in (None, 0):  # 0 train tasks: an online protocol
        log.warning(cap_warning((choices or {}).get("experiment", cfg.experiment_name), caps))
    try:
        with StopOnSignals() as signals:
            parts = build(cfg, choices, overrides)  # closes the invocation itself if it fails
            return _run_built(cfg, parts, signals, t0)
    except Exception as exc:
        full = disk_full(exc)
        if full is None:
            raise
        try:
            folder = run_dir(cfg)
        except Exception:
            folder = None
        raise disk_full_error(full, folder) from exc


def _run_built(cfg: DictConfig, parts: Parts, signals: StopOnSignals, t0: float) -> dict[str, Any]:
    """Acquire, evaluate and summarize with the built ``parts``; close everything after."""
    acting: Policy = parts.policy
    logger = run_log = ended = None
    try:
        logger = build_part(cfg.logger)
        run_log = run_log_in(parts.store.dir)  # <run_dir>/run.log, besides Hydra's outputs/
        group = "/".join([cfg.experiment_name, cfg.env.name, cfg.method.name, cfg.backbone.name])
        logger.start(
            parts.store.dir,
            name=f"{group}/seed{cfg.seed}",
            group=group,
            config=OmegaConf.to_container(cfg, resolve=True),
            job_type=cfg.method.name,
            run_id=run_id_for(parts.store.dir),
        )
        live = LiveMetrics(logger, parts.store, parts.memory)
        parts.store.listeners.append(live)
        if parts.memory.acquisition_policy == "expert":
            acting = ExpertPolicy(epsilon=0.0, seed=cfg.seed, name="scripted-expert-eps0")
        acquire(parts, acting)
        if parts.protocol.freeze_during_eval:
            parts.memory.freeze()
        written = evaluate(parts)
        records = latest(written)
        metrics = metrics_of(parts, cfg, written)
        usage = usage_of(parts, acting)
        parts.store.write_json(files.METRICS, metrics)
        parts.store.write_json(files.USAGE, usage)
        logger.log_episodes([_row(r) for r in records])
        logger.log_metrics(metrics, step=live.step + 1)
        logger.log_summary({"usage": usage})
        check_errors(parts, records, "evaluation")  # metrics written first: flag `errors`
        log.info("results in %s", parts.store.dir)
        return metrics
    except BaseException as exc:
        ended = exc
        raise
    finally:
        with signals.closing():  # a signal from here on waits until all of this is done
            close_invocation(parts.store, time.perf_counter() - t0, ended)
            if logger is not None:
                code = 0 if ended is None else getattr(ended, "exit_status", 1)
                quietly("finishing the logger", lambda: logger.finish(exit_code=code), ended)
            close_parts(parts, *([acting] if acting is not parts.policy else []))
            if run_log is not None:
                run_log.close()


def _row(record) -> dict[str, Any]:
    """An episode's record for the logger's table, its trajectory as readable text."""
    out = record.to_json()
    out["trajectory"] = trajectory_text(record.trajectory)
    return out


def trajectory_text(trajectory: Mapping[str, Any] | None) -> str:
    """The observation / action lines of a recorded trajectory (``Trajectory.to_dict``)."""
    if not trajectory:
        return ""
    lines = [f"[observation] {trajectory.get('initial_observation', '')}"]
    for k, step in enumerate(trajectory.get("steps", []), 1):
        lines.append(f"[{k}] > {step.get('action', '')}")
        lines.append(f"[{k}] {step.get('observation', '')}")
    return "\n".join(lines)
