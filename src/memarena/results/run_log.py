"""The run's log file in its run directory, and the third-party log noise kept out of it.

Hydra writes ``run.log`` into ``outputs/<timestamp>/``; :func:`run_log_in` adds the same lines,
in the same format, to ``<run_dir>/run.log`` (appended: a resumed run's invocations follow each
other) for as long as the run lasts.

:class:`QuietLoggers` is a logging filter that ``conf/hydra/job_logging/memarena.yaml`` puts on
every handler: records of the listed third-party loggers below their ``level`` are dropped.
A filter on the handlers (rather than a level on the loggers) also holds for a library that sets
its own logger's level when it is imported (bm25s sets DEBUG), whatever the import order.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

RUN_LOG = "run.log"
FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"  # Hydra's job_logging format


class QuietLoggers(logging.Filter):
    """Drops records of the ``loggers`` (name -> lowest level kept; a name covers its
    children, ``httpx`` covers ``httpx._client``) below their level."""

    def __init__(self, loggers: Mapping[str, str | int] | None = None) -> None:
        super().__init__()
        self.levels = {
            name: logging.getLevelName(level) if isinstance(level, str) else int(level)
            for name, level in (loggers or {}).items()
        }

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        while name:
            level = self.levels.get(name)
            if level is not None:
                return record.levelno >= level
            name = name.rpartition(".")[0]
        return True


class RunLog:
    """``<run_dir>/run.log`` attached to the root logger until :meth:`close`."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / RUN_LOG
        root = logging.getLogger()
        like = next((h for h in root.handlers if isinstance(h, logging.FileHandler)), None)
        self.handler = logging.FileHandler(self.path, mode="a", encoding="utf-8")
        formatter = like.formatter if like is not None and like.formatter else None
        self.handler.setFormatter(formatter or logging.Formatter(FORMAT))
        if like is not None:  # the same level and filters (QuietLoggers) as Hydra's run.log
            self.handler.setLevel(like.level)
            for f in like.filters:
                self.handler.addFilter(f)
        root.addHandler(self.handler)

    def close(self) -> None:
        logging.getLogger().removeHandler(self.handler)
        self.handler.close()


def run_log_in(run_dir: Path) -> RunLog:
    """Copy this process's log lines to ``<run_dir>/run.log`` until the returned handle is
    closed."""
    return RunLog(run_dir)
