"""What run.py calls: a config pre-check before Hydra, the job body after it, and the
multirun summary (a Hydra callback, ``hydra.callbacks.summary`` in conf/config.yaml).

In a multirun each job that ends writes one line of the sweep's table to ``<sweep dir>/jobs/
<job num>.json`` (method, env, backbone, seed, success rate and its interval over tasks,
progress, n_tasks, flags, run folder); a job that fails with a MemarenaError (a config error, a
server that does not answer, a run dir in use) is written to ``<sweep dir>/failed_jobs/<job
num>.json`` instead and the sweep goes on. When the sweep ends, :class:`SweepSummary` prints
one table of every job and the failed jobs with their first error line, then the jobs that did
not finish and the one command that reruns only those (:mod:`memarena.launch.rerun`), and
exits with status 1 when a job failed. On a cluster launcher a job whose server did not answer
is run again first, with back-off (:func:`run_retrying`). Any other exception stops the sweep
at once (Hydra's behaviour) with its traceback and a non-zero status too. A full disk stops it
with its one message (status 2), and SIGTERM / SIGHUP after closing the current job (status
143 / 129).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.core import MemarenaError
from memarena.launch.records import FAILED_JOBS, JOBS, write_failure, write_job

log = logging.getLogger("memarena")

# Hydra flags whose next argument is a value, not an override.
_VALUE_FLAGS = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--info",
    "-i",
    "--experimental-rerun",
}


def command_line_overrides(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _VALUE_FLAGS:
            skip = arg != "--info"
            continue
        if arg.startswith("-") and not arg.startswith(("~", "+")):
            continue
        if arg.lstrip("+~").startswith(("hydra.", "hydra/")):
            continue
        out.append(arg)
    return out


def list_options(argv: list[str], conf_dir: Path) -> int:
    """``python run.py --list [group]``: print the config groups, or one group's options with
    their one-line descriptions (:func:`memarena.conf_options.listing`); the exit status."""
    from memarena.conf_options import listing

    rest = argv[argv.index("--list") + 1 :]
    if len(rest) > 1 or len(argv) > len(rest) + 1:
        print("memarena: --list takes one group at most and nothing else: "
              "python run.py --list [group]", file=sys.stderr)  # fmt: skip
        return 2
    try:
        print(listing(rest[0] if rest else None, conf_dir))
    except ValueError as exc:
        print(f"memarena: {exc}", file=sys.stderr)
        return 2
    return 0


def precheck(argv: list[str], conf_dir: Path) -> list[str]:
    """Exit with a one-paragraph message when the overrides name a bad choice or key, or give
    a value of the wrong type (``seed=abc``, ``method.threshold=abc``: checked against the
    annotation of the parameter that takes it, before any run folder exists); return
    the arguments with group shorthands expanded (``env.wiki=local`` -> ``env/wiki=local``)
    and, in a sweep, a key that only some jobs' configs have forced (``++method.k_local=3``:
    :func:`drop_keys_not_taken` removes it again in the jobs whose part does not take it).
    Notes (such a key) go to stderr; a sweep experiment run without ``-m`` whose job is not a
    cell of the sweep is refused (:func:`memarena.config_check.plan_overrides`)."""
    from memarena.config_check import expand_group_shorthand, plan_overrides

    argv = expand_group_shorthand(argv)
    overrides = command_line_overrides(argv)
    if not overrides:
        return argv
    multirun = any(a in ("-m", "--multirun") for a in argv)
    shows = any(a in ("--cfg", "-c", "--info", "-i") for a in argv)  # prints, runs no job
    plan = plan_overrides(overrides, conf_dir, multirun=multirun or shows)
    if plan.error:
        print(plan.error, file=sys.stderr)
        sys.exit(2)
    for note in plan.notes:
        print(note, file=sys.stderr)
    argv = [plan.rewrites.get(a, a) for a in argv]
    # the pre-flight of every job (data, API keys, packages, snapshots) before any starts; the
    # Slurm dry run prints it under its plan (memarena.launch.slurm)
    dry_run = any(a.strip().lower() == "hydra.launcher.dry_run=true" for a in argv)
    if multirun and not shows and not dry_run:
        from memarena.config_check import sweep_cells
        from memarena.launch.preflight import sweep_report

        jobs = [plan.rewrites.get(o, o) for o in overrides]
        report = sweep_report(*sweep_cells(jobs, plan.sweep_params), conf_dir).text()
        if report:
            print(report, file=sys.stderr)
            sys.exit(2)
    return argv


def resolved_settings_note(argv: list[str], conf_dir: Path) -> str:
    """For ``--cfg job``: YAML comments naming each method setting the run resolves when it is
    built (a reading such as ``official``), with its value for this env and where it comes
    from; "" when none does (or the config does not compose)."""
    import dataclasses

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import get_object
    from omegaconf import OmegaConf

    from memarena.core.env import env_family

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            cfg = compose(config_name="config", overrides=command_line_overrides(argv))
        node = OmegaConf.to_container(cfg.method, resolve=True)
        settings_class = getattr(get_object(str(node["_target_"])), "Settings", None)
        if settings_class is None:
            return ""
        env = str(cfg.env.name)
        given = settings_class.take(None, dict(node))
        resolved = given.resolved(env)
    except Exception:  # --cfg still prints Hydra's own view; the note is extra
        return ""
    finally:
        GlobalHydra.instance().clear()
    changed = [
        (f.name, getattr(given, f.name), getattr(resolved, f.name))
        for f in dataclasses.fields(given)
        if getattr(given, f.name) != getattr(resolved, f.name)
    ]
    if not changed:
        return ""
    where = f"{settings_class.__module__}.{settings_class.__qualname__}.resolved"
    lines = [f"# memarena: method settings resolved when the run is built, for env {env} "
             f"(family {env_family(env)}; {where}):"]  # fmt: skip
    lines += [f"#   method.{k}: {a} -> {b}" for k, a, b in changed]
    lines.append("# (written resolved into run_info.json, metrics.json and the memory snapshot)")
    return "\n".join(lines)


def drop_keys_not_taken(cfg: DictConfig, overrides: list[str]) -> list[str]:
    """In a sweep job, remove each ``++a.b.key=v`` whose node ``a.b`` builds a target that does
    not take ``key`` (``method.k_local`` in the ``method=none`` jobs of ``-m method=none,memco
    method.k_local=3``); return the overrides dropped. A key no job takes never gets here:
    :func:`precheck` refuses it."""
    from omegaconf import OmegaConf, open_dict

    from memarena.pipeline.validate import accepted_keys

    dropped = []
    for override in overrides:
        if not override.startswith("++"):
            continue
        key = override[2:].split("=", 1)[0]
        parent_path, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent_path) if parent_path else None
        if not isinstance(node, DictConfig) or "_target_" not in node:
            continue
        taken, _ = accepted_keys(str(node._target_))
        if taken is not None and leaf not in taken:
            with open_dict(node):
                node.pop(leaf)
            dropped.append(override)
    return dropped


def run_job(cfg: DictConfig) -> float | None:
    """Run one job; a MemarenaError ends it with its message (and exit code 2 outside multirun;
    a full disk stops a sweep too: every next job would fail the same way). SIGTERM / SIGHUP
    end it after the run is closed (:mod:`memarena.pipeline.ending`) with the status of a
    process killed by the signal, 143 / 129; a sweep stops there."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from memarena.pipeline import run
    from memarena.pipeline.ending import DiskFullError, Terminated

    hydra = HydraConfig.get() if HydraConfig.initialized() else None
    choices = dict(hydra.runtime.choices) if hydra else {}
    overrides = list(hydra.overrides.task) if hydra else []
    if hydra is not None and hydra.mode == RunMode.MULTIRUN:
        for override in drop_keys_not_taken(cfg, overrides):
            log.warning(
                "%s does not apply to this job (%s); it runs without it",
                override[2:],
                " ".join(f"{g}={o}" for g, o in choices.items() if g in ("method", "env")),
            )
            overrides.remove(override)
    name_adhoc_run(cfg, overrides)
    try:
        metrics = run_retrying(run, cfg, choices, overrides, hydra)
    except Terminated as exc:
        log.error(
            "memarena: %s; the records written so far are kept. Rerun the same command to "
            "resume where this run stopped.",
            exc,
        )
        sys.exit(exc.exit_status)
    except MemarenaError as exc:
        text = str(exc)
        text = text if text.startswith("memarena:") else f"memarena: {text}"
        log.error(text)
        multirun = hydra is not None and hydra.mode == RunMode.MULTIRUN
        if multirun and not isinstance(exc, DiskFullError):
            write_failure(Path(hydra.sweep.dir), hydra.job.num, overrides, text)
            return None
        sys.exit(2)
    line = job_line(cfg, metrics)
    log.info(
        "%s %s %s seed %s: success_rate=%s progress_rate=%.3f n_tasks=%s n_episodes=%d%s",
        line["method"], line["env"], line["backbone"], line["seed"], line["success"],
        metrics["progress_rate"], line["n_tasks"], metrics["n_episodes"],
        f" flags={line['flags']}" if line["flags"] else "",
    )  # fmt: skip
    if hydra is not None and hydra.mode == RunMode.MULTIRUN:
        write_job(Path(hydra.sweep.dir), hydra.job.num, {**line, "overrides": overrides})
    if choices.get("experiment") == "demo" and (hydra is None or hydra.mode != RunMode.MULTIRUN):
        from memarena.pipeline import run_dir
        from memarena.pipeline.demo_summary import summary_text

        print(summary_text(run_dir(cfg)), flush=True)  # what the run did, how to look at it
        from memarena.pipeline.demo_recall import run_arms, side_by_side, wanted

        second = wanted(cfg, overrides)
        if second:  # none vs MemCo on env=recall: does memory change what the model does?
            try:
                print(side_by_side(run_arms(second)), flush=True)
            except MemarenaError as exc:
                log.error(
                    "memarena: the demo's second part (experiment=%s) failed: %s", second, exc
                )
                sys.exit(2)
    return float(metrics["success_rate"])


def run_retrying(run: Any, cfg: DictConfig, choices: dict, overrides: list[str], hydra: Any):
    """``run(cfg, choices, overrides)``, run again after a transient failure (a MemarenaError
    with ``transient``: the LLM or env server did not answer) up to ``hydra.launcher.retries``
    times, waiting ``hydra.launcher.retry_backoff_s`` doubled at each try; each try resumes
    from the records the last one wrote. Launchers without these keys (local, joblib,
    submitit_local) do not retry."""
    import time

    from omegaconf import OmegaConf

    launcher = hydra.launcher if hydra is not None else None
    retries = int(OmegaConf.select(launcher, "retries", default=0) or 0) if launcher else 0
    backoff = (
        float(OmegaConf.select(launcher, "retry_backoff_s", default=0) or 0) if launcher else 0
    )
    for attempt in range(retries + 1):
        try:
            return run(cfg, choices, overrides)
        except MemarenaError as exc:
            if not getattr(exc, "transient", False) or attempt == retries:
                raise
            wait = backoff * 2**attempt
            log.warning("memarena: %s; retry %d of %d in %.0f s (hydra.launcher.retries), "
                        "resuming from the records written so far", str(exc).splitlines()[0],
                        attempt + 1, retries, wait)  # fmt: skip
            time.sleep(wait)
    raise AssertionError("not reached")


def name_adhoc_run(cfg: DictConfig, overrides: list[str]) -> None:
    """An ad-hoc job's results folder named from its overrides (:mod:`memarena.pipeline.adhoc`),
    so two ad-hoc commands that differ in a key the folder does not show never share one."""
    from omegaconf import open_dict

    from memarena.pipeline.adhoc import adhoc_name, is_adhoc

    if is_adhoc(overrides):
        with open_dict(cfg):
            cfg.experiment_name = adhoc_name(str(cfg.experiment_name), overrides)


def job_line(cfg: DictConfig, metrics: dict[str, Any]) -> dict[str, Any]:
    """One job's row of the sweep table: who it is, its success rate with the 95% interval over
    tasks, progress, tasks, episodes, flags and run folder."""
    from memarena.pipeline import run_dir

    low, high = metrics.get("success_rate_ci95") or (float("nan"), float("nan"))
    method = cfg.method.name + (f"+{cfg.ablation.name}" if cfg.ablation.get("name") else "")
    return {
        "method": method,
        "env": cfg.env.name,
        "backbone": cfg.backbone.name,
        "seed": cfg.seed,
        "success": f"{metrics['success_rate']:.3f} [{low:.3f}, {high:.3f}]",
        "progress": f"{metrics['progress_rate']:.3f}",
        "n_tasks": metrics.get("n_tasks"),
        "n_episodes": metrics.get("n_episodes"),
        "flags": ",".join(metrics.get("flags") or []),
        "run_dir": str(run_dir(cfg)),
    }


COLUMNS = ("job", "method", "env", "backbone", "seed", "success", "progress", "n_tasks",
           "flags")  # fmt: skip


def sweep_table(sweep_dir: Path) -> str:
    """The sweep's table (:data:`COLUMNS`; success: the rate [95% interval over tasks]) and,
    below it, each failed job with its overrides and the first line of its error; "" when no
    job wrote anything."""

    def read(folder: str) -> list[dict[str, Any]]:
        paths = sorted((sweep_dir / folder).glob("*.json"), key=lambda p: int(p.stem))
        return [json.loads(p.read_text()) for p in paths]

    done, failed = read(JOBS), read(FAILED_JOBS)
    if not done and not failed:
        return ""
    rows = [[str(j.get(c, "")) for c in COLUMNS] for j in done]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(COLUMNS)]
    lines = [f"memarena: sweep of {len(done) + len(failed)} job(s), {len(failed)} failed "
             f"(success: rate [95% interval over tasks]; runs in their run folders)"]  # fmt: skip
    lines.append("  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip())
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if failed:
        lines.append(f"failed job(s) (details in {sweep_dir / FAILED_JOBS}):")
        for body in failed:
            first = (str(body["error"]).strip().splitlines() or [""])[0]
            lines.append(f"  #{body['job']} {' '.join(body['overrides'])}: {first}")
    return "\n".join(lines)


class SweepSummary(Callback):
    """At the end of a multirun: one table of every job, the failed ones named with their first
    error line, then every unfinished job (failed or never ended) and the one command that
    reruns only those (memarena.launch.rerun); exit with status 1 when a job failed."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from memarena.launch.rerun import unfinished_text

        sweep_dir = Path(str(config.hydra.sweep.dir))
        table = sweep_table(sweep_dir)
        if table:
            print(table, flush=True)
        left = unfinished_text(config, sweep_dir)
        if left:
            print(left, flush=True)
        if left or any((sweep_dir / FAILED_JOBS).glob("*.json")):
            sys.exit(1)
