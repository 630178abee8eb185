"""Stage 1: memory acquisition on the train split, then the snapshot.

The train tasks are cut into chunks; the memory observes one chunk per update, its tasks as
groups of ``acquisition_samples`` trajectories (ReMe: N=8 at 0.9, each sample with its own
request seeds; ``run`` = sample index in ``acquisition.jsonl``), in task order:

- a method that reads its memory while acquiring (``retrieves_during_acquisition``) is updated
  every ``protocol.update_every`` tasks, and later chunks see what earlier ones wrote;
- a method that does not is observed ``acquisition_observe_tasks`` tasks at a time (bigger LLM
  batches), and its episodes run at full concurrency.

Records are appended as episodes end; the memory observes a chunk only after all its episodes
ended, so every episode of chunk k saw the memory as the chunks before k left it, and a record
of chunk k+1 exists only once chunk k is complete. On resume the memory is rebuilt from the
records chunk by chunk without rerunning an episode (memory-side LLM calls come from the call
cache), the missing samples of a part-done chunk run against the same memory its finished ones
saw, and the updates are exactly those of an uninterrupted run (what the retrievals of the
finished episodes did to the memory is re-applied from their records before their chunk's
update: :func:`~memarena.pipeline.learning.replay_retrievals`). With ``protocol.retry_errors`` the
episodes that ended with status error are run again (see
:func:`~memarena.pipeline.tasks.drop_errors`); once the snapshot exists acquisition is over.
When every acquisition episode ended with an error, or more than ``protocol.max_error_rate`` of
them, the run stops before the snapshot (:func:`~memarena.pipeline.summarize.check_errors`).

The snapshot is written to ``memory/`` and marked complete with the checksum of
``memory.json``, the env, the memory's size and what acquisition cost the memory's own LLM
(``memory_usage`` / ``memory_fallbacks``, from the records and the replayed updates, so the
same for a resumed run); a later resume verifies and loads it.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from memarena.agent import EpisodeRunner, Policy
from memarena.core import MemoryMethod, Task
from memarena.core.costs import add_into, counters, difference
from memarena.pipeline.build import Parts
from memarena.pipeline.learning import replay_retrievals
from memarena.pipeline.summarize import check_errors
from memarena.pipeline.tasks import cap_tasks, chunks, drop_errors, stated
from memarena.results import store as files
from memarena.results.records import EpisodeRecord
from memarena.results.store import verify_snapshot

log = logging.getLogger(__name__)


def complete_groups(records: list[EpisodeRecord], n: int) -> dict[str, list[EpisodeRecord]]:
    """Task id -> its ``n`` samples (the last record of each sample wins), for the tasks whose
    samples are all there."""
    by_task: dict[str, dict[int, EpisodeRecord]] = {}
    for rec in records:
        by_task.setdefault(rec.task_id, {})[int(rec.run or 0)] = rec
    return {
        tid: [by_run[i] for i in range(n)]
        for tid, by_run in by_task.items()
        if all(i in by_run for i in range(n))
    }


def load_pinned(parts: Parts, memory: MemoryMethod) -> None:
    """Load the snapshot the run starts from, from its private copy, checked against the
    sha256 the run pinned (``protocol.snapshot_from``)."""
    folder = parts.snapshot_copy or parts.snapshot_from
    if folder is None:
        raise ValueError("load_pinned: the run has no snapshot_from")
    if parts.snapshot_sha is not None:
        files.check_pinned(folder, parts.snapshot_sha, parts.snapshot_from)
    memory.load(folder)


def acquire(parts: Parts, policy: Policy) -> None:
    """Acquire the memory of ``parts`` with ``policy`` acting (the agent, or the expert for
    ICL), or load the snapshot evaluation starts from."""
    memory, store, protocol = parts.memory, parts.store, parts.protocol
    if not memory.learns:
        return
    memory.begin_phase("acquire")
    if parts.snapshot_from is not None:
        log.info("evaluating on the saved snapshot %s (no acquisition)", parts.snapshot_from)
        load_pinned(parts, memory)
        return
    if store.snapshot_complete():
        log.info("memory snapshot found in %s; skipping acquisition", store.memory_dir)
        verify_snapshot(store.memory_dir)
        memory.load(store.memory_dir)
        return
    tasks = cap_tasks(parts.env.tasks(protocol.train_split), protocol.max_train_tasks)
    tasks = stated(parts.env, tasks, protocol.prompt_layout)
    n = max(1, int(memory.acquisition_samples))
    reads = memory.retrieves_during_acquisition
    unit = protocol.update_every if reads else max(1, int(memory.acquisition_observe_tasks))
    task_chunks = chunks(tasks, unit)
    done = complete_groups(store.read_records(files.ACQUISITION), n)
    if protocol.retry_errors:
        failed = {t for t, group in done.items() if any(r.status == "error" for r in group)}
        done = drop_errors(done, failed, task_chunks, sequential=reads)
        if failed:
            log.info("retrying %d acquisition task(s) that ended with an error", len(failed))
    start = counters(memory)
    settings = parts.settings
    if memory.acquisition_temperature is not None:
        settings = replace(settings, temperature=float(memory.acquisition_temperature))
    runner = EpisodeRunner(parts.env, policy, memory, settings, phase="acquire", retrieve=reads)
    log.info(
        "acquisition: %d train tasks x %d sample(s), %d per memory update (%d tasks done)",
        len(tasks), n, unit, sum(t.id in done for t in tasks),
    )  # fmt: skip
    replayed: dict = {}  # the recorded retrievals' cost, back in the memory's counters
    for k, chunk in enumerate(task_chunks):
        todo = [t for t in chunk if t.id not in done]
        if reads:  # the finished episodes' retrievals, re-applied before the update
            add_into(replayed, replay_retrievals(memory, [r for t in chunk if t.id in done
                                                          for r in done[t.id]]))  # fmt: skip
        if todo:
            _run_samples(runner, todo, n, k, done, parts)
        memory.observe_groups([[r.pair() for r in done[t.id]] for t in chunk])
    # a dead server must not leave a snapshot learnt from error episodes: no snapshot, and a
    # rerun retries them (protocol.max_error_rate, or every episode an error)
    check_errors(parts, [r for t in tasks for r in done[t.id]], "acquisition")
    with files.snapshot_rewrite(store.memory_dir):  # refused while a run evaluates it
        memory.save(store.memory_dir)
    # the updates' cost (replayed on resume, so complete) plus every episode's retrievals
    spent = difference(counters(memory), start)
    spent = difference(difference(spent, runner.retrieval_spent), replayed)
    for t in tasks:
        for rec in done[t.id]:
            cost = rec.memory_cost or {}
            add_into(spent, {"usage": cost.get("usage"), "fallbacks": cost.get("fallbacks")})
    info = {
        "n_train_tasks": len(tasks),
        "method": memory.name,
        "env": memory.env_name,  # a snapshot_from run on another env is refused
        "memory_size": memory.size(),
        "memory_usage": spent.get("usage", {}),
        "memory_fallbacks": spent.get("fallbacks", {}),
    }
    store.mark_snapshot_complete(info)


def _run_samples(
    runner: EpisodeRunner,
    tasks: list[Task],
    n: int,
    update: int,
    done: dict[str, list[EpisodeRecord]],
    parts: Parts,
) -> None:
    """Run ``n`` samples of each task, appending each record as its episode ends; ``done``
    gets the new groups."""
    pairs = [(task, s) for task in tasks for s in range(n)]
    results = runner.run(
        [t for t, _ in pairs],
        runs=[s for _, s in pairs],
        on_finish=lambda r: parts.store.append_record(files.ACQUISITION, _record(r, pairs, update)),
    )
    for i, task in enumerate(tasks):
        done[task.id] = [_record(r, pairs, update) for r in results[i * n : (i + 1) * n]]


def _record(result, pairs, update: int) -> EpisodeRecord:
    return EpisodeRecord.of(
        result.trajectory,
        result.outcome,
        run=pairs[result.order][1],
        wall_s=result.wall_s,
        details=result.details,
        memory_cost=result.memory_cost,
        update=update,
    )
