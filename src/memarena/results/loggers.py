"""Experiment loggers, built by Hydra from ``conf/logger/*.yaml``.

The pipeline calls, per run: ``start(run_dir, name, group, config, run_id=...)`` before
acquisition -> ``log_metrics(..., step=k)`` as episodes end (acquisition and evaluation) ->
``log_metrics`` / ``log_summary`` / ``log_episodes`` at the end -> ``finish()``. ``finish`` is safe
to call twice, and a logger is also a context manager (``finish(exit_code=1)`` when the block
raised).

:class:`WandbLogger` defaults to W&B offline mode: no network and no API key; each invocation
of a run lands in ``<run_dir>/wandb/offline-run-<time>-<id>/``, with the id derived from the run
directory (:func:`run_id_for`), so a resumed run continues the same W&B run; the log prints the
``wandb sync`` command that uploads all of them. :func:`read_offline_run` reads a run back
(config, summary, history, state) with W&B's own transaction-log reader (``wandb leet inspect``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.jsonl import numbered_lines
from memarena.results.metrics import flatten

log = logging.getLogger(__name__)

WANDB_MODES = ("online", "offline", "disabled")


class Logger(ABC):
    """Where a run's config, metrics and episode table go besides ``results/``."""

    @abstractmethod
    def start(self, run_dir: Path, name: str, group: str, config: Mapping[str, Any],
              job_type: str | None = None, run_id: str | None = None) -> None:
        """Open a run. ``group`` (experiment/env/method/backbone) gathers the seeds; a run
        started again with the same ``run_id`` continues it."""

    @abstractmethod
    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Log metrics at ``step`` (nested dicts are flattened to ``a/b`` keys)."""

    def log_summary(self, values: Mapping[str, Any]) -> None:  # noqa: B027 - optional hook
        """Record final values (the run's summary), not as a point of a curve."""

    @abstractmethod
    def log_episodes(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Log the evaluated episode records as a table."""

    @abstractmethod
    def finish(self, exit_code: int = 0) -> None:
        """Close the run; a second call does nothing."""

    def __enter__(self) -> Logger:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.finish(exit_code=0 if exc_type is None else 1)


class NoLogger(Logger):
    """Logs nothing (``logger=none``)."""

    def start(self, run_dir: Path, name: str, group: str, config: Mapping[str, Any],
              job_type: str | None = None, run_id: str | None = None) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        pass

    def log_episodes(self, records: Sequence[Mapping[str, Any]]) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        pass


def _plain(config: Any) -> dict:
    """A plain dict from a dict or an OmegaConf config (resolved)."""
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(config):
            return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    except ImportError:  # omegaconf comes with hydra; a plain dict needs nothing
        pass
    return dict(config or {})


def run_id_for(run_dir: str | Path) -> str:
    """The W&B run id of a run directory: the same folder (a resumed run) gives the same id, a
    different folder (another results dir, experiment, seed ...) another one."""
    digest = hashlib.sha1(str(Path(run_dir).resolve()).encode()).hexdigest()
    return f"ma-{digest[:16]}"


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, list | tuple | dict) else value


class WandbLogger(Logger):
    """Weights & Biases logger.

    Args:
        project, entity, tags, notes, job_type: passed to ``wandb.init`` (``job_type`` given to
            ``start`` wins over this default).
        mode: ``offline`` (default; no network, no API key), ``online`` or ``disabled``.
        dir: parent of the ``wandb/`` folder; ``None`` puts it in the run directory.
        episodes_table: log the episode records as a ``wandb.Table`` named ``episodes``.
        system_metrics: sample CPU/GPU/memory usage in the background (W&B "system" charts).
        init_timeout: seconds ``wandb.init`` may take before it fails.
        finish_wait_s: seconds ``finish`` waits for the run's log to be flushed to disk.
        flush_interval_s: seconds between W&B's writes of the run's ``.wandb`` log while it runs;
            a killed run keeps what was written up to its last flush (0: W&B writes only when a
            32 KiB buffer fills or the run finishes).
    """

    def __init__(self, project: str = "memarena", mode: str = "offline", entity: str | None = None,
                 dir: str | None = None, tags: Sequence[str] = (), notes: str | None = None,
                 job_type: str | None = None, episodes_table: bool = True,
                 system_metrics: bool = True, init_timeout: float = 90.0,
                 finish_wait_s: float = 30.0, flush_interval_s: float = 5.0) -> None:
        if mode not in WANDB_MODES:
            raise ConfigError(f"logger.mode={mode!r} is not a W&B mode; choose one of "
                              f"{list(WANDB_MODES)} (or logger=none to log nothing)")
        self.project, self.mode, self.entity, self.dir = project, mode, entity, dir
        self.tags, self.notes, self.job_type = list(tags or []), notes, job_type
        self.episodes_table, self.system_metrics = episodes_table, system_metrics
        self.init_timeout, self.finish_wait_s = init_timeout, finish_wait_s
        self.flush_interval_s = flush_interval_s
        self._run = None

    @property
    def run(self):
        """The live ``wandb`` run, or None outside ``start`` ... ``finish``."""
        return self._run

    def start(self, run_dir: Path, name: str, group: str, config: Mapping[str, Any],
              job_type: str | None = None, run_id: str | None = None) -> None:
        if self._run is not None:
            raise RuntimeError("WandbLogger.start: a run is already open; call finish() first")
        import wandb

        root = Path(self.dir) if self.dir else Path(run_dir)
        root.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(console="off", silent=True, init_timeout=self.init_timeout,
                                  x_disable_stats=not self.system_metrics,
                                  x_transaction_log_flush_interval=self.flush_interval_s)
        try:
            self._run = wandb.init(
                project=self.project, entity=self.entity, mode=self.mode, dir=str(root),
                name=name, group=group, job_type=job_type or self.job_type,
                tags=self.tags or None, notes=self.notes, config=_plain(config),
                id=run_id, resume="allow" if run_id else None,
                reinit="create_new", settings=settings)
        except Exception as e:  # wandb raises several types (UsageError, CommError, timeouts)
            raise ConfigError(
                f"W&B could not start a run in mode={self.mode} ({type(e).__name__}: {e}). "
                "Use logger.mode=offline (no network or API key; upload later with "
                "`wandb sync <run_dir>/wandb/offline-run-*`), or logger=none.") from e
        if self.mode == "offline":
            log.info("W&B offline run %s in %s; upload it with: %s", self._run.id,
                     Path(self._run.dir).parent, self.sync_command())
        elif self.mode == "online":
            log.info("W&B run %s: %s", self._run.id, self._run.url)

    def sync_command(self) -> str | None:
        """The ``wandb sync`` command that uploads this offline run: every ``offline-run-*``
        folder of its id (one per invocation; W&B syncs them in order as one run)."""
        if self._run is None or self.mode != "offline":
            return None
        here = Path(self._run.dir).parent  # <root>/wandb/offline-run-<time>-<id>
        folders = sorted(here.parent.glob(f"offline-run-*-{self._run.id}")) or [here]
        return "wandb sync " + " ".join(str(f) for f in folders)

    def _require_run(self, what: str):
        if self._run is None:
            raise RuntimeError(f"WandbLogger.{what}: no open run; call start() first")
        return self._run

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        run = self._require_run("log_metrics")
        flat = {k: v for k, v in flatten(metrics).items()
                if isinstance(v, bool | int | float | str)}
        # commit: the step's row is written now, not when a later step arrives (a run killed
        # right after would lose it)
        run.log({k: v for k, v in flat.items() if not isinstance(v, str)}, step=step,
                commit=True)
        run.summary.update(flat)

    def log_summary(self, values: Mapping[str, Any]) -> None:
        run = self._require_run("log_summary")
        run.summary.update({k: v for k, v in flatten(values).items()
                            if isinstance(v, bool | int | float | str)})

    def log_episodes(self, records: Sequence[Mapping[str, Any]]) -> None:
        run = self._require_run("log_episodes")
        if not self.episodes_table or not records:
            return
        import wandb

        columns = list(dict.fromkeys(k for r in records for k in r))
        rows = [[_cell(r.get(c)) for c in columns] for r in records]
        table = wandb.Table(columns=columns, data=rows, allow_mixed_types=True)
        run.log({"episodes": table}, commit=False)  # joins the step of the next metrics

    def finish(self, exit_code: int = 0) -> None:
        """Finish the run and wait until its ``.wandb`` log is complete on disk.

        ``run.finish()`` returns before wandb-core has flushed the run's transaction log (it only
        publishes the finish request), so a reader or ``wandb sync`` right after could see a
        truncated file; we wait, up to ``finish_wait_s``, until W&B's reader sees it finished.
        """
        command = self.sync_command()
        run, self._run = self._run, None
        if run is None:
            return
        sync_file = Path(run.settings.sync_file) if self.mode != "disabled" else None
        run.finish(exit_code=exit_code)
        if sync_file is not None and not _wait_until_finished(sync_file, self.finish_wait_s):
            log.warning("W&B run log %s not complete after %.0fs; it will be written when the "
                        "W&B service exits", sync_file, self.finish_wait_s)
        if command:
            log.info("W&B offline run written; upload it with: %s", command)


# --- reading an offline run back, with W&B's own reader -------------------------------------


def inspect_wandb_file(path: str | Path, summary: bool = False) -> Any:
    """``wandb leet inspect --json`` on a ``.wandb`` transaction log: its records (a list of
    dicts ``{"num", "type", <type>: ...}``), or with ``summary`` the run's state (``state``,
    ``exit_code``, ``run_id``, ``config``, ``summary``, ``step`` ...). Works offline; a log
    cut short by a killed process reads up to its last complete record."""
    cmd = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(path)]
    if summary:
        cmd.insert(-1, "--summary")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd[2:])}` failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    if summary:
        return json.loads(proc.stdout)
    return [json.loads(line) for _, line in numbered_lines(proc.stdout)]


def _wait_until_finished(path: Path, timeout: float) -> bool:
    """Poll until W&B's reader sees the run at ``path`` finished (its exit record written)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if path.exists() and inspect_wandb_file(path, summary=True).get("state") != "running":
                return True
        except (RuntimeError, ValueError, subprocess.TimeoutExpired):  # mid-write; look again
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def _public(flat: Mapping[str, Any]) -> dict[str, Any]:
    """W&B's own keys (``_step``, ``_runtime``, ``_timestamp`` ...) left out."""
    return {k: v for k, v in flat.items() if not k.startswith("_")}


def read_offline_run(path: str | Path) -> dict[str, Any]:
    """Config, summary, history and state of an offline W&B run, read by W&B's own reader.

    ``path`` is a ``.wandb`` file, an ``offline-run-*`` folder, or any folder above one (e.g. the
    memarena run directory). All the invocations of the newest run id found there (a resumed run
    has one folder per invocation) are read oldest first and merged, as ``wandb sync`` uploads
    them. Returns ``{"files", "run": {id, project, group, job_type, name}, "config", "summary",
    "history": [one dict per logged step, with "_step"], "state", "exit_code"}`` (state and exit
    code of the last invocation; ``state`` is ``running`` for a killed one).
    """
    p = Path(path)
    files = [p] if p.is_file() else [f for f in p.glob("**/*.wandb")
                                     if "latest-run" not in f.parts]
    if not files:
        raise FileNotFoundError(f"no .wandb file under {p}")
    files.sort(key=lambda f: f.parent.name)  # offline-run-<time>-<id>: oldest first
    run_id = files[-1].stem.removeprefix("run-")
    files = [f for f in files if f.stem == f"run-{run_id}"]
    out: dict[str, Any] = {"files": files, "run": {}, "config": {}, "summary": {},
                           "history": [], "state": None, "exit_code": None}
    for file in files:
        for rec in inspect_wandb_file(file):
            kind = rec.get("type") or ""
            body = rec.get(kind) or {}
            if kind == "run":
                out["run"] = {"id": body.get("run_id"), "project": body.get("project"),
                              "group": body.get("run_group"), "job_type": body.get("job_type"),
                              "name": body.get("display_name")}
                out["config"].update((body.get("config") or {}).get("update", {}))
            elif kind == "config":
                out["config"].update(body.get("update", {}))
            elif kind == "history":
                out["history"].append({"_step": int((body.get("step") or {}).get("num", 0)),
                                       **_public(body.get("item", {}))})
        state = inspect_wandb_file(file, summary=True)
        out["summary"].update(_public(state.get("summary") or {}))
        out["state"], out["exit_code"] = state.get("state"), state.get("exit_code")
    out["config"].pop("_wandb", None)
    return out
