"""Live metrics: what the logger sees while a run acquires and evaluates.

Every episode record written to the run directory (``acquisition.jsonl``, ``episodes.jsonl``,
``reflections.jsonl``) is one step of the run's W&B history, logged as the episode ends (so a
wave of lockstep episodes adds one point per episode that ended in it). The step counts the
records on disk, so a resumed run continues the curves of the invocation it resumes, and a
killed run keeps every point logged before it died. Per phase (``acquire``, ``eval``,
``reflect``): episodes done, running success and progress rate, mean steps, tokens so far, and
errors; plus the memory's size.
"""

from __future__ import annotations

from typing import Any

from memarena.core.memory import MemoryMethod
from memarena.results import store as files
from memarena.results.loggers import Logger
from memarena.results.records import EpisodeRecord
from memarena.results.store import RunStore

PHASES = {files.ACQUISITION: "acquire", files.EPISODES: "eval", files.REFLECTIONS: "reflect"}


class LiveMetrics:
    """Listens to ``store`` (see :attr:`RunStore.listeners`) and logs one step per record."""

    def __init__(self, logger: Logger, store: RunStore, memory: MemoryMethod) -> None:
        self.logger, self.memory = logger, memory
        self.totals: dict[str, dict[str, float]] = {}
        self.step = 0
        for name in PHASES:  # what earlier invocations wrote: the curves continue from there
            for record in store.read_records(name):
                self._add(PHASES[name], record)

    def _add(self, phase: str, record: EpisodeRecord) -> dict[str, float]:
        t = self.totals.setdefault(
            phase, {"episodes": 0, "successes": 0, "progress": 0.0, "steps": 0, "tokens": 0,
                    "errors": 0})  # fmt: skip
        t["episodes"] += 1
        t["successes"] += bool(record.success)
        t["progress"] += float(record.progress or 0.0)
        t["steps"] += int(record.steps or 0)
        t["tokens"] += int(record.tokens or 0)
        t["errors"] += record.status == "error"
        self.step += 1
        return t

    def __call__(self, name: str, record: EpisodeRecord) -> None:
        phase = PHASES.get(name)
        if phase is None:
            return
        t = self._add(phase, record)
        n = t["episodes"]
        metrics: dict[str, Any] = {
            phase: {
                "episodes": n,
                "success_rate": t["successes"] / n,
                "progress_rate": t["progress"] / n,
                "avg_steps": t["steps"] / n,
                "tokens": t["tokens"],
                "errors": t["errors"],
            },
            "episodes_done": self.step,
        }
        size = self.memory.size()
        if size is not None:
            metrics["memory_size"] = size
        self.logger.log_metrics(metrics, step=self.step)
