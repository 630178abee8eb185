"""Experiment loggers, built by Hydra from ``conf/logger/*.yaml``.

The pipeline calls, per run: ``start(run_dir, name, group, config)`` -> ``log_metrics(...)`` /
``log_episodes(...)`` -> ``finish()``. ``finish`` is safe to call twice, and a logger is also a
context manager (``finish(exit_code=1)`` when the block raised).

:class:`WandbLogger` defaults to W&B offline mode: no network and no API key; the run lands in
``<run_dir>/wandb/offline-run-<time>-<id>/`` and ``wandb sync`` uploads it later.
:func:`read_offline_run` reads such a run back (config, summary, history) without a server.
"""

from __future__ import annotations

import json
import logging
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.results.metrics import flatten

log = logging.getLogger(__name__)

WANDB_MODES = ("online", "offline", "disabled")


class Logger(ABC):
    """Where a run's config, metrics and episode table go besides ``results/``."""

    @abstractmethod
    def start(self, run_dir: Path, name: str, group: str, config: Mapping[str, Any],
              job_type: str | None = None) -> None:
        """Open a run. ``group`` (experiment/env/method/backbone) gathers the seeds."""

    @abstractmethod
    def log_metrics(self, metrics: Mapping[str, Any]) -> None:
        """Log metrics (nested dicts are flattened to ``a/b`` keys)."""

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
              job_type: str | None = None) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, Any]) -> None:
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
    """

    def __init__(self, project: str = "memarena", mode: str = "offline", entity: str | None = None,
                 dir: str | None = None, tags: Sequence[str] = (), notes: str | None = None,
                 job_type: str | None = None, episodes_table: bool = True,
                 system_metrics: bool = True, init_timeout: float = 90.0,
                 finish_wait_s: float = 30.0) -> None:
        if mode not in WANDB_MODES:
            raise ConfigError(f"logger.mode={mode!r} is not a W&B mode; choose one of "
                              f"{list(WANDB_MODES)} (or logger=none to log nothing)")
        self.project, self.mode, self.entity, self.dir = project, mode, entity, dir
        self.tags, self.notes, self.job_type = list(tags or []), notes, job_type
        self.episodes_table, self.system_metrics = episodes_table, system_metrics
        self.init_timeout, self.finish_wait_s = init_timeout, finish_wait_s
        self._run = None

    @property
    def run(self):
        """The live ``wandb`` run, or None outside ``start`` ... ``finish``."""
        return self._run

    def start(self, run_dir: Path, name: str, group: str, config: Mapping[str, Any],
              job_type: str | None = None) -> None:
        if self._run is not None:
            raise RuntimeError("WandbLogger.start: a run is already open; call finish() first")
        import wandb

        root = Path(self.dir) if self.dir else Path(run_dir)
        root.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(console="off", silent=True, init_timeout=self.init_timeout,
                                  x_disable_stats=not self.system_metrics)
        try:
            self._run = wandb.init(
                project=self.project, entity=self.entity, mode=self.mode, dir=str(root),
                name=name, group=group, job_type=job_type or self.job_type,
                tags=self.tags or None, notes=self.notes, config=_plain(config),
                reinit="create_new", settings=settings)
        except Exception as e:  # wandb raises several types (UsageError, CommError, timeouts)
            raise ConfigError(
                f"W&B could not start a run in mode={self.mode} ({type(e).__name__}: {e}). "
                "Use logger.mode=offline (no network or API key; upload later with "
                "`wandb sync <run_dir>/wandb/offline-run-*`), or logger=none.") from e
        if self.mode != "disabled":
            log.info("W&B %s run %s in %s", self.mode, self._run.id, self._run.dir)

    def _require_run(self, what: str):
        if self._run is None:
            raise RuntimeError(f"WandbLogger.{what}: no open run; call start() first")
        return self._run

    def log_metrics(self, metrics: Mapping[str, Any]) -> None:
        run = self._require_run("log_metrics")
        flat = {k: v for k, v in flatten(metrics).items()
                if isinstance(v, bool | int | float | str)}
        run.log({k: v for k, v in flat.items() if not isinstance(v, str)})
        run.summary.update(flat)

    def log_episodes(self, records: Sequence[Mapping[str, Any]]) -> None:
        run = self._require_run("log_episodes")
        if not self.episodes_table or not records:
            return
        import wandb

        columns = list(dict.fromkeys(k for r in records for k in r))
        rows = [[_cell(r.get(c)) for c in columns] for r in records]
        run.log({"episodes": wandb.Table(columns=columns, data=rows, allow_mixed_types=True)})

    def finish(self, exit_code: int = 0) -> None:
        """Finish the run and wait until its ``.wandb`` log is complete on disk.

        ``run.finish()`` returns before wandb-core has flushed the run's transaction log (it only
        publishes the finish request), so a reader or ``wandb sync`` right after could see a
        truncated file; we wait, up to ``finish_wait_s``, for its exit record.
        """
        run, self._run = self._run, None
        if run is None:
            return
        sync_file = Path(run.settings.sync_file) if self.mode != "disabled" else None
        run.finish(exit_code=exit_code)
        if sync_file is not None and not _wait_for_exit_record(sync_file, self.finish_wait_s):
            log.warning("W&B run log %s not complete after %.0fs; it will be written when the "
                        "W&B service exits", sync_file, self.finish_wait_s)


# --- reading an offline run back (W&B's LevelDB-style record log of protobuf Records) -------

_BLOCK, _HEADER = 32768, 7  # block size; file header (":W&B", magic, version) = record header


def _records(path: Path):
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    if data[:4] != b":W&B":
        raise ValueError(f"{path} is not a W&B transaction log")
    i, chunk = _HEADER, b""
    while i + _HEADER <= len(data):
        if _BLOCK - i % _BLOCK < _HEADER:  # block tail too short for a header: zero padding
            i += _BLOCK - i % _BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[i:i + _HEADER])
        if kind == 0 and length == 0:
            break
        chunk += data[i + _HEADER:i + _HEADER + length]
        i += _HEADER + length
        if kind in (1, 4):  # FULL or LAST fragment
            record = pb.Record()
            record.ParseFromString(chunk)
            chunk = b""
            yield record


def _wait_for_exit_record(path: Path, timeout: float) -> bool:
    """Poll until the transaction log at ``path`` holds its exit record (written last)."""
    from google.protobuf.message import DecodeError  # protobuf comes with wandb

    deadline, size = time.monotonic() + timeout, -1
    while True:
        new_size = path.stat().st_size if path.exists() else 0
        if new_size != size:
            size = new_size
            try:
                if any(r.WhichOneof("record_type") == "exit" for r in _records(path)):
                    return True
            except (ValueError, struct.error, DecodeError):  # mid-write; look again
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def _set(tree: dict, item: Any) -> None:
    keys = list(item.nested_key) or [item.key]
    for k in keys[:-1]:
        tree = tree.setdefault(k, {})
    tree[keys[-1]] = json.loads(item.value_json)


def read_offline_run(path: str | Path) -> dict[str, Any]:
    """Config, summary and history of an offline W&B run, read from its ``.wandb`` file.

    ``path`` is the ``.wandb`` file, an ``offline-run-*`` folder, or any folder above one
    (e.g. the memarena run directory); when it holds several runs the newest is read.
    Returns ``{"file", "run": {id, project, group, job_type, name}, "config", "summary",
    "history": [one dict per log call]}``.
    """
    p = Path(path)
    files = [p] if p.is_file() else sorted(p.glob("**/*.wandb"), key=lambda f: f.parent.name)
    if not files:
        raise FileNotFoundError(f"no .wandb file under {p}")
    out: dict[str, Any] = {"file": files[-1], "run": {}, "config": {}, "summary": {},
                           "history": []}
    for rec in _records(files[-1]):
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            r = rec.run
            out["run"] = {"id": r.run_id, "project": r.project, "group": r.run_group,
                          "job_type": r.job_type, "name": r.display_name}
            for item in r.config.update:
                _set(out["config"], item)
        elif kind == "config":
            for item in rec.config.update:
                _set(out["config"], item)
        elif kind == "summary":
            for item in rec.summary.update:
                _set(out["summary"], item)
        elif kind == "history":
            row: dict[str, Any] = {}
            for item in rec.history.item:
                _set(row, item)
            out["history"].append(row)
    out["config"].pop("_wandb", None)
    return out
