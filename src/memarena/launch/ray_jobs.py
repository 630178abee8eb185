"""``launcher=ray``: each job of a sweep as one Ray task with the resources its backbone needs.

What it does differently from hydra-ray-launcher's own ``launch`` (whose job body it reuses):

- **Joining or starting** (:func:`init_kwargs`): ``hydra.launcher.ray.init.address`` set (``auto``,
  ``<head ip>:<port>``, ``ray://...``), ``RAY_ADDRESS``, or a live cluster recorded in Ray's
  ``ray_current_cluster`` file: join it, passing none of the options Ray refuses when joining
  (the plugin always adds ``object_store_memory``). ``address: null`` with no live cluster, or a
  stale ``ray_current_cluster`` left by a cluster that is gone: start a local instance.
- **Resources per job** (:mod:`memarena.launch.resources`): ``num_gpus`` / ``num_cpus`` from the
  job's backbone, so Ray sets ``CUDA_VISIBLE_DEVICES`` per job; ``hydra.launcher.ray.remote``
  set by hand wins. A job no live node can hold is refused before anything is submitted
  (``hydra.launcher.check_fit=false`` for a cluster that adds nodes on demand).
- **Where each job ran**: ``<sweep dir>/<job num>/ray_task.json`` (node, job and task ids, the
  cluster's address, the resources Ray assigned, ``CUDA_VISIBLE_DEVICES``). A job runs in the
  directory the sweep was started from (relative ``paths.*`` mean the same as on this machine).
- **Retries**: a task whose worker or node died (preemption, OOM kill) is run again by Ray up to
  3 times (``max_retries``; ``hydra.launcher.ray.remote.max_retries`` sets it); a job whose LLM
  or env server did not answer runs again in its task with back-off (``hydra.launcher.retries``,
  ``retry_backoff_s``: memarena.cli.run_retrying). Either resumes from the run's records.
- **Failures**: a task that raised is written to ``<sweep dir>/failed_jobs/<num>.json`` with its
  exception's type, message, the file and line that raised it and the worker's pid and node
  (``<num>.traceback.txt`` beside it holds the worker's traceback), so the sweep's summary lists
  it with the others and prints the command that reruns only the unfinished jobs
  (memarena.launch.rerun). The log names the Ray log folder (``worker-*-<pid>.out/.err``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memarena.launch.sweep import PlannedJob, pin_dirs, planned_or_stop, stop

log = logging.getLogger(__name__)

# ray.init arguments that only a new local instance takes (Ray raises when joining with them)
LOCAL_ONLY = (
    "num_cpus",
    "num_gpus",
    "resources",
    "labels",
    "object_store_memory",
    "_system_config",
    "_enable_object_reconstruction",
)
TASK_RECORD = "ray_task.json"


def recorded_cluster() -> str | None:
    """The address in Ray's ``ray_current_cluster`` file (the last ``ray start`` here), if any."""
    try:
        from ray._private.utils import read_ray_address

        return read_ray_address() or None
    except Exception:  # another Ray layout: look where Ray writes it
        base = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
        path = Path(base) / "ray" / "ray_current_cluster"
        return (path.read_text().strip() or None) if path.is_file() else None


def reachable(address: str, timeout: float = 1.0) -> bool:
    """Whether something accepts a TCP connection at ``host:port``."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return False
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def init_kwargs(init: Mapping[str, Any]) -> dict[str, Any]:
    """``ray.init`` keyword arguments for ``hydra.launcher.ray.init`` (see the module docstring)."""
    args = {k: v for k, v in dict(init).items()}
    address = args.get("address")
    if address in (None, "") and not os.environ.get("RAY_ADDRESS"):
        recorded = recorded_cluster()
        if recorded and reachable(recorded):
            args["address"] = recorded
            log.info("joining the running Ray cluster at %s (ray_current_cluster)", recorded)
        else:
            if recorded:
                log.info("ray_current_cluster names %s, which is gone: starting a local "
                         "Ray instance", recorded)  # fmt: skip
            args["address"] = "local"
    if args.get("address") != "local":
        for key in LOCAL_ONLY:
            args.pop(key, None)
    return {k: v for k, v in args.items() if v is not None}


def task_options(job: PlannedJob, remote: Mapping[str, Any]) -> dict[str, Any]:
    """``ray.remote`` options of one job: its resources, then the options set by hand."""
    return {
        "num_gpus": job.resources.gpus,
        "num_cpus": job.resources.cpus,
        "max_retries": 3,  # a dead worker or node (preemption); exceptions are not retried
        **dict(remote),
    }


def check_fit(jobs: Sequence[PlannedJob], remote: Mapping[str, Any]) -> None:
    """Stop with one message when a job needs more than any live node of the cluster has."""
    import ray

    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    for job in jobs:
        opts = task_options(job, remote)
        gpus, cpus = float(opts["num_gpus"] or 0), float(opts["num_cpus"] or 0)
        if any(n.get("GPU", 0) >= gpus and n.get("CPU", 0) >= cpus for n in nodes):
            continue
        have = "; ".join(f"{n.get('GPU', 0):g} GPUs, {n.get('CPU', 0):g} CPUs" for n in nodes)
        stop(
            f"memarena: {job.describe()} (backbone={job.backbone}) needs {gpus:g} GPUs and "
            f"{cpus:g} CPUs on one node, and no node of this Ray cluster has them (nodes: "
            f"{have or 'none'}). Nothing was submitted. Join a cluster with such a node, serve "
            "the model (scripts/serve.py) and use backbone=openai_server, or set "
            "hydra.launcher.check_fit=false for a cluster that adds nodes on demand."
        )


def run_on_ray(
    hydra_context: Any, sweep_config: DictConfig, task_function: Any, singleton_state: Any
) -> Any:
    """The body of one Ray task: record where it runs, then run the Hydra job. A job that raises
    raises here, in the worker, so that Ray hands the driver its type, message and traceback
    (Hydra's ``run_job`` would keep the exception in the JobReturn, its traceback lost)."""
    import ray
    from hydra.core.utils import JobStatus, setup_globals
    from hydra_plugins.hydra_ray_launcher._launcher_util import _run_job

    import memarena.config_resolvers  # noqa: F401  (the resolvers conf/ uses, in this worker)

    setup_globals()  # Hydra's own resolvers (now, hydra): a fresh worker has none
    cwd = OmegaConf.select(sweep_config, "hydra.runtime.cwd")
    if cwd and Path(cwd).is_dir():
        os.chdir(cwd)
    ctx = ray.get_runtime_context()
    record = {
        "node_id": ctx.get_node_id(),
        "job_id": ctx.get_job_id(),
        "task_id": ctx.get_task_id(),
        "gcs_address": ctx.gcs_address,
        "assigned_resources": ctx.get_assigned_resources(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "pid": os.getpid(),
        "logs_dir": logs_dir(),
    }
    job_dir = Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / TASK_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    ret = _run_job(hydra_context, sweep_config, task_function, singleton_state)
    if ret.status == JobStatus.FAILED and isinstance(ret._return_value, BaseException):
        raise ret._return_value
    return ret


def logs_dir() -> str | None:
    """This node's Ray log folder (``<temp dir>/session_*/logs``: ``worker-*-<pid>.out/.err``
    hold each worker's output), None when Ray does not say."""
    try:
        from ray._private.worker import _global_node

        return str(_global_node.get_logs_dir_path())
    except Exception:  # another Ray layout, or not connected
        return None


FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
WORKER = re.compile(r"\(pid=(\d+), ip=([^)\s]+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure(err: BaseException) -> tuple[str, str]:
    """What the driver knows of a Ray task that ended without a result: one line (the
    exception's type and message, and the file, line and function that raised it in the worker,
    with the worker's pid and node) and the worker's whole traceback ("" when Ray has none)."""
    import ray

    if isinstance(err, ray.exceptions.RayTaskError):
        # ray.get raises a class of both RayTaskError and the cause's: its str is the
        # traceback (Ray's own frames left out), its first line the task's pid and node
        cause = err.cause
        kind = type(cause).__name__
        message = (str(cause).strip().splitlines() or [""])[0]
        trace = ANSI.sub("", str(getattr(err, "traceback_str", None) or str(err)))
        frames = FRAME.findall(trace)
        worker = WORKER.search(ANSI.sub("", str(err)))
        where = [f"raised at {frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}"] if frames else []
        where += [f"worker pid {worker[1]} on {worker[2]}"] if worker else []
        return f"{kind}: {message}" + (f" ({'; '.join(where)})" if where else ""), trace
    lines = [line.strip() for line in ANSI.sub("", str(err)).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0] if lines else ''}", ANSI.sub("", str(err))


def record_failure(sweep_dir: Path, job: PlannedJob, err: BaseException) -> str:
    """Write the failed job to ``<sweep dir>/failed_jobs/<num>.json`` (as a job that failed
    with a MemarenaError is; the sweep's summary lists it) and its traceback beside it; return
    the summary's line."""
    from memarena.launch.records import FAILED_JOBS, write_failure

    line, trace = failure(err)
    folder = sweep_dir / FAILED_JOBS
    folder.mkdir(parents=True, exist_ok=True)
    trace_file = folder / f"{job.num}.traceback.txt"
    trace_file.write_text(trace + "\n")
    text = f"memarena: Ray task failed: {line}; traceback in {trace_file}"
    write_failure(sweep_dir, job.num, job.overrides, text)
    return text


def launch(launcher: Any, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> list:
    import ray
    from hydra.core.singleton import Singleton
    from hydra.core.utils import configure_log, setup_globals

    setup_globals()
    config = launcher.config
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    jobs = planned_or_stop(launcher.hydra_context, config, job_overrides, initial_job_idx)
    for job in jobs:  # the folders as this process names them, not as each worker would
        pin_dirs(job.config)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    remote = OmegaConf.to_container(launcher.ray_cfg.remote, resolve=True) or {}
    if not ray.is_initialized():
        init = OmegaConf.to_container(launcher.ray_cfg.init, resolve=True) or {}
        args = init_kwargs(init)
        try:
            ray.init(**args)
        except (ConnectionError, ValueError, RuntimeError) as err:
            stop(
                f"memarena: launcher=ray could not start or join Ray with "
                f"hydra.launcher.ray.init={args}: {err}. Join a running cluster with "
                "hydra.launcher.ray.init.address=<head ip>:<port> (or auto), or leave it null "
                "to start a local instance."
            )
    if launcher.check_fit:
        check_fit(jobs, remote)
    log.info("Ray: %d jobs, sweep output dir %s; worker logs (worker-*-<pid>.out/.err) in %s "
             "on each node (a job's node and pid: <sweep dir>/<job>/%s)", len(jobs), sweep_dir,
             logs_dir() or "the Ray session folder", TASK_RECORD)  # fmt: skip
    refs = []
    for job in jobs:
        opts = task_options(job, remote)
        log.info("\t%s  [%g GPUs, %g CPUs]", job.describe(), opts["num_gpus"], opts["num_cpus"])
        task = ray.remote(**opts)(run_on_ray)
        refs.append(
            task.remote(
                launcher.hydra_context, job.config, launcher.task_function, Singleton.get_state()
            )  # fmt: skip
        )
    returns, failed = [], 0
    for job, ref in zip(jobs, refs, strict=True):
        try:
            returns.append(ray.get(ref))
        except ray.exceptions.RayError as err:  # the others' results are complete
            log.error("%s: %s", job.describe(), record_failure(sweep_dir, job, err))
            failed += 1
    if failed:
        log.error("%d Ray task(s) of this sweep ended without a result (the sweep's summary "
                  "lists them); worker logs: %s on each node", failed,
                  logs_dir() or "the Ray session folder")  # fmt: skip
    return returns
