"""Evaluation with a memory that keeps learning (the papers' online / dynamic settings).

Each run starts from the acquired snapshot (with ``protocol.memory_across_runs``: the first run
of each repetition does; run r then starts with the memory run r-1 ended with, as ReMe's
run_bfcl.py runs its 4 runs against one memory service). Its test tasks are cut into chunks of
``protocol.update_every`` (1 = the papers' online setting: the memory is updated after every
task, and the next task sees it). For each chunk: its episodes run against the memory as it is,
the memory observes them in task order, then a method with ``max_reflections`` > 0 may retry
the failed ones with lessons (:meth:`~memarena.core.MemoryMethod.reflect`; retries go to
``reflections.jsonl`` and are observed by the memory). Only then are the chunk's episodes
appended to ``episodes.jsonl`` (each with its ``update`` index), so a chunk is done exactly when
all its episodes are on disk.

What counts for a task (``protocol.count_retries``): false, its first attempt (retries never
enter the metrics; memarena's stricter reading); true, its last trial, as ReMe's official
agents record it (a task that fails and then succeeds on a retry is a success). Then the
record in ``episodes.jsonl`` of a retried task is its last retry (``attempt`` k), and its first
attempt is kept in ``reflections.jsonl`` as attempt 0, so the other reading can be read back.

A resumed run rebuilds the memory from the done chunks (observing each task's first attempt,
then its retries) and continues with the first chunk not done; the episodes of a part-written
chunk are kept (they ran against the same memory), their recorded retries are replayed, and
only its missing tasks run. Before a done chunk is observed, what its episodes' retrievals did
to the memory is re-applied from their records (:func:`replay_retrievals`: the retrieval's LLM
cost, and, for a method whose retrieval changes its state, that change), so the memory each
update sees is the one the uninterrupted run had. So a killed and resumed run makes the same
memory updates, and gets the same metrics, as one that was never interrupted. With
``protocol.retry_errors``, a chunk holding an episode that ended with status error is run again
from that episode on, and every later chunk with it (and, with ``memory_across_runs``, every
later run of the repetition: :func:`memarena.pipeline.evaluate.evaluate`).

What an update costs the memory's own LLM (observing the chunk, reflections and their
retries) is measured around it and kept on the last record the chunk writes
(``update_cost``), so cost metrics come from the records, not from this process's counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from memarena.agent import EpisodeResult, EpisodeRunner
from memarena.core import MemoryContext, MemoryMethod, MemoryQuery, Task
from memarena.core.costs import add_into, counters, difference
from memarena.core.memory import Capabilities
from memarena.pipeline.build import Parts
from memarena.pipeline.tasks import chunks, drop_errors
from memarena.results import store as files
from memarena.results.records import EpisodeRecord

Chains = dict[str, dict[int, EpisodeRecord]]  # task id -> attempt -> its retry record


class FixedContext(MemoryMethod):
    """Stands in for the memory during a retry: every task gets the context the memory's
    ``reflect`` gave for it (its lessons), retrieved once per task."""

    name = "retry-lessons"
    capabilities = Capabilities(learns=False)

    def __init__(self, contexts: dict[str, MemoryContext]) -> None:
        super().__init__()
        self.contexts = contexts

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.contexts.get(query.task.id, MemoryContext.empty())


def retry_chains(retries: Sequence[EpisodeRecord]) -> Chains:
    """Each task's latest chain of retry records (attempt -> record), in written order: a record
    whose attempt is not past the chain's last one starts a new chain (a chunk run again after
    a kill or an error), so records of an abandoned chain never replay."""
    out: Chains = {}
    for rec in retries:
        chain = out.setdefault(rec.task_id, {})
        attempt = rec.attempt or 0
        if chain and attempt <= max(chain):
            chain.clear()
        chain[attempt] = rec
    return out


def replay_retrievals(memory: MemoryMethod, records: Sequence[EpisodeRecord]) -> dict:
    """Re-apply what the retrievals of the recorded episodes did to ``memory``
    (:meth:`~memarena.core.MemoryMethod.replay_retrieval`, in record order), as a resume does
    for episodes it does not run again; returns their summed cost (``usage`` / ``fallbacks``),
    which the memory's counters now hold again."""
    total: dict = {}
    for rec in records:
        if rec.trajectory is None:
            continue
        cost = rec.memory_cost or {}
        spent = {"usage": cost.get("usage") or {}, "fallbacks": cost.get("fallbacks") or {}}
        memory.replay_retrieval(rec.pair()[0], spent)
        add_into(total, spent)
    return total


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
    ) -> bool:
        """Replay the done chunks from ``episodes`` / ``retries`` (this run's records), then
        run the rest; True when anything ran (not only replayed)."""
        have = {r.task_id: r for r in episodes}  # the last record of a task wins
        task_chunks = chunks(tasks, self.parts.protocol.update_every)
        if self.parts.protocol.retry_errors:
            failed = {tid for tid, r in have.items() if r.status == "error"}
            have = drop_errors(have, failed, task_chunks, sequential=True)
        chains = retry_chains(retries)
        replaying, ran = True, False
        for k, chunk in enumerate(task_chunks):
            if replaying and all(t.id in have for t in chunk):
                self._replay(chunk, have, chains)
                continue
            replaying, ran = False, True
            self._update(runner, k, chunk, have, chains)
        return ran

    @staticmethod
    def _first(rec: EpisodeRecord, chains: Chains) -> EpisodeRecord:
        """A task's first attempt: its episode record, or (``count_retries``) the attempt-0
        copy in the retries when the episode record is a later trial."""
        if rec.attempt:
            return chains.get(rec.task_id, {}).get(0, rec)
        return rec

    def _replay(self, chunk: list[Task], have: dict, chains: Chains) -> None:
        """Observe a done chunk, then its retries in the order they were made (attempt, then
        task order)."""
        memory = self.parts.memory
        firsts = [self._first(have[t.id], chains) for t in chunk]
        replay_retrievals(memory, firsts)  # what their retrievals did, before the update
        memory.observe_groups([[r.pair()] for r in firsts])
        again = [
            (attempt, i, rec)
            for i, t in enumerate(chunk)
            for attempt, rec in chains.get(t.id, {}).items()
            if attempt > 0
        ]
        for *_, rec in sorted(again, key=lambda x: (x[0], x[1])):
            self._observe_recorded(rec)

    def _observe_recorded(self, rec: EpisodeRecord) -> None:
        context = MemoryContext(**(rec.context or {}))
        self.parts.memory.observe_retry(*rec.pair(), rec.attempt or 0, context)

    def _update(
        self, runner: EpisodeRunner, update: int, chunk: list[Task], have: dict, chains: Chains
    ) -> None:
        """Run the chunk's missing tasks, observe the chunk in task order, retry its failures
        (the tasks already written replay their recorded retries), then write the new
        episodes (with ``count_retries``, a retried task's last trial)."""
        todo = [t for t in chunk if t.id not in have]
        # the chunk's episodes on disk were retrieved for before this update: re-apply that
        replay_retrievals(self.parts.memory, [self._first(have[t.id], chains) for t in chunk
                                              if t.id in have])  # fmt: skip
        fresh = [self._record(r, update) for r in (runner.run(todo) if todo else [])]
        firsts = {tid: self._first(r, chains) for tid, r in have.items()}
        by_id = {**firsts, **{r.task_id: r for r in fresh}}
        records = [by_id[t.id] for t in chunk]
        before = counters(self.parts.memory)
        self.parts.memory.observe_groups([[r.pair()] for r in records])
        written = {t.id: chains.get(t.id, {}) for t in chunk if t.id in have}
        finals = self._retries([(r, r.pair()) for r in records if not r.success], update, written)
        out = fresh
        if self.parts.protocol.count_retries:  # a retried task counts as its last trial
            out = [finals.get(r.task_id, r) for r in fresh]
        if out:
            out[-1].update_cost = difference(counters(self.parts.memory), before) or None
        for rec in out:  # written last: a chunk is done when all its episodes are on disk
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

    def _retries(self, failed: list, update: int, written: Chains) -> dict[str, EpisodeRecord]:
        """Retry the failed first attempts, attempt by attempt, and return each retried task's
        last trial. Tasks in ``written`` (already on disk) replay their recorded retries instead
        of running; within an attempt the memory observes the retries in task order."""
        memory, counted = self.parts.memory, self.parts.protocol.count_retries
        last: dict[str, EpisodeRecord] = {}
        first = {rec.task_id: rec for rec, _ in failed}
        for attempt in range(1, int(memory.max_reflections) + 1):
            live = [(rec, pair) for rec, pair in failed if rec.task_id not in written]
            recorded = {
                rec.task_id: written[rec.task_id][attempt]
                for rec, _ in failed
                if attempt in written.get(rec.task_id, {})
            }
            for rec in recorded.values():  # what reflect did for them, where it did it
                memory.replay_retry_retrieval(rec.pair()[0], MemoryContext(**(rec.context or {})))
            contexts = memory.reflect([pair for _, pair in live], attempt) if live else []
            asked = {rec.task_id: c for (rec, _), c in zip(live, contexts, strict=True) if c}
            if not asked and not recorded:
                break
            results = {}
            if asked:
                runner = EpisodeRunner(
                    self.parts.env,
                    self.parts.policy,
                    FixedContext(asked),
                    self.parts.settings,
                    phase=f"reflect{attempt}",
                    run=self.run,
                    progress_bar=False,
                )
                tasks = [pair[0].task for rec, pair in live if rec.task_id in asked]
                results = {r.trajectory.task.id: r for r in runner.run(tasks)}
            again = []
            for rec, _ in failed:  # task order
                tid = rec.task_id
                if tid in recorded:
                    done = recorded[tid]
                    self._observe_recorded(done)
                elif tid in results:
                    result, context = results[tid], asked[tid]
                    memory.observe_retry(result.trajectory, result.outcome, attempt, context)
                    done = self._record(result, update, attempt=attempt, context=asdict(context))
                    if counted and attempt == 1:  # the first attempt, for the other reading
                        copy = replace(first[tid], attempt=0, update_cost=None)
                        self.parts.store.append_record(files.REFLECTIONS, copy)
                    self.parts.store.append_record(files.REFLECTIONS, done)
                else:
                    continue
                last[tid] = done
                if not done.success:
                    again.append((done, done.pair()))
            failed = again
            if not failed:
                break
        return last
