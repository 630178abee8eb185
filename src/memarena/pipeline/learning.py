"""Evaluation with a memory that keeps learning (the papers' online / dynamic settings).

Each run starts from the acquired snapshot. Its test tasks are cut into chunks of
``protocol.update_every`` (1 = the papers' online setting: the memory is updated after every
task, and the next task sees it). For each chunk: its episodes run against the memory as it is,
the memory observes them in task order, then a method with ``max_reflections`` > 0 may retry
the failed ones with lessons (:meth:`~memarena.core.MemoryMethod.reflect`; retries go to
``reflections.jsonl``, are observed by the memory and never count in the metrics). Only then
are the chunk's episodes appended to ``episodes.jsonl`` (each with its ``update`` index), so a
chunk is done exactly when all its episodes are on disk.

A resumed run rebuilds the memory from the done chunks (observing each, then its retries,
the last record of each wins) and continues with the first chunk not done; the episodes of a
part-written chunk are kept (they ran against the same memory) and only its missing tasks run.
So a killed and resumed run makes the same memory updates, and gets the same metrics, as one
that was never interrupted. With ``protocol.retry_errors``, a chunk holding an episode that
ended with status error is run again from that episode on, and every later chunk with it.

What an update costs the memory's own LLM (observing the chunk, reflections and their
retries) is measured around it and kept on the last record the chunk writes
(``update_cost``), so cost metrics come from the records, not from this process's counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from memarena.agent import EpisodeResult, EpisodeRunner
from memarena.core import MemoryContext, MemoryMethod, MemoryQuery, Task
from memarena.core.costs import counters, difference
from memarena.pipeline.build import Parts
from memarena.pipeline.tasks import chunks, drop_errors
from memarena.results import store as files
from memarena.results.records import EpisodeRecord


class FixedContext(MemoryMethod):
    """Stands in for the memory during a retry: every task gets the context the memory's
    ``reflect`` gave for it (its lessons), retrieved once per task."""

    name = "retry-lessons"
    learns = False

    def __init__(self, contexts: dict[str, MemoryContext]) -> None:
        super().__init__()
        self.contexts = contexts

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.contexts.get(query.task.id, MemoryContext.empty())


@dataclass
class LearningRun:
    """One evaluation run (of one view) whose memory learns as it goes."""

    parts: Parts
    run: int
    agent: str | None
    repetition: int

    def play(
        self,
        runner: EpisodeRunner,
        tasks: Sequence[Task],
        episodes: Sequence[EpisodeRecord],
        retries: Sequence[EpisodeRecord],
    ) -> None:
        """Replay the done chunks from ``episodes`` / ``retries`` (this run's records), then
        run the rest."""
        have = {r.task_id: r for r in episodes}  # the last record of a task wins
        task_chunks = chunks(tasks, self.parts.protocol.update_every)
        if self.parts.protocol.retry_errors:
            failed = {tid for tid, r in have.items() if r.status == "error"}
            have = drop_errors(have, failed, task_chunks, sequential=True)
        tried = {(r.task_id, r.attempt or 0): r for r in retries}
        replaying = True
        for k, chunk in enumerate(task_chunks):
            if replaying and all(t.id in have for t in chunk):
                self._replay(chunk, have, tried)
                continue
            replaying = False
            self._update(runner, k, chunk, have)

    def _replay(self, chunk: list[Task], have: dict, tried: dict) -> None:
        """Observe a done chunk, then its retries in the order they were made (attempt, then
        task order)."""
        memory = self.parts.memory
        memory.observe_groups([[have[t.id].pair()] for t in chunk])
        position = {t.id: i for i, t in enumerate(chunk)}
        again = [r for (tid, _), r in tried.items() if tid in position]
        for rec in sorted(again, key=lambda r: (r.attempt or 0, position[r.task_id])):
            context = MemoryContext(**(rec.context or {}))
            memory.observe_retry(*rec.pair(), rec.attempt or 0, context)

    def _update(self, runner: EpisodeRunner, update: int, chunk: list[Task], have: dict) -> None:
        """Run the chunk's missing tasks, observe the chunk in task order, retry its failures,
        then write the new episodes."""
        todo = [t for t in chunk if t.id not in have]
        fresh = [self._record(r, update) for r in (runner.run(todo) if todo else [])]
        by_id = {**have, **{r.task_id: r for r in fresh}}
        records = [by_id[t.id] for t in chunk]
        before = counters(self.parts.memory)
        self.parts.memory.observe_groups([[r.pair()] for r in records])
        self._retries([(r, r.pair()) for r in records if not r.success], update)
        if fresh:
            fresh[-1].update_cost = difference(counters(self.parts.memory), before) or None
        for rec in fresh:  # written last: a chunk is done when all its episodes are on disk
            self.parts.store.append_record(files.EPISODES, rec)

    def _record(self, result: EpisodeResult, update: int, **extra) -> EpisodeRecord:
        return EpisodeRecord.of(
            result.trajectory,
            result.outcome,
            run=self.run,
            wall_s=result.wall_s,
            details=result.details,
            memory_cost=result.memory_cost,
            repetition=self.repetition,
            agent=self.agent,
            update=update,
            **extra,
        )

    def _retries(self, failed: list, update: int) -> None:
        memory = self.parts.memory
        for attempt in range(1, int(memory.max_reflections) + 1):
            if not failed:
                return
            contexts = memory.reflect([pair for _, pair in failed], attempt)
            asked = {rec.task_id: c for (rec, _), c in zip(failed, contexts, strict=True) if c}
            if not asked:
                return
            runner = EpisodeRunner(
                self.parts.env,
                self.parts.policy,
                FixedContext(asked),
                self.parts.settings,
                phase=f"reflect{attempt}",
                run=self.run,
                progress_bar=False,
            )
            tasks = [pair[0].task for rec, pair in failed if rec.task_id in asked]
            failed = []
            for result in runner.run(tasks):
                context = asked[result.trajectory.task.id]
                memory.observe_retry(result.trajectory, result.outcome, attempt, context)
                rec = self._record(result, update, attempt=attempt, context=asdict(context))
                self.parts.store.append_record(files.REFLECTIONS, rec)
                if not result.outcome.success:
                    failed.append((rec, (result.trajectory, result.outcome)))
