"""Stage 2: evaluation on the test split, every run of every view.

``protocol.repetitions`` x ``protocol.runs`` runs (Avg@k / Pass@k per repetition) of each
evaluation view (MemCo: each agent's local memory + the global memory; other methods: one
view). With a frozen memory, ``protocol.concurrency`` episodes are stepped in lockstep and each
episode is appended to ``episodes.jsonl`` as it ends; a memory that keeps learning runs as
described in :mod:`memarena.pipeline.learning`, and its memory at the end of each run is saved
to ``memory_final/[<view>/]run<k>/``. Each learning run starts from the acquired snapshot;
with ``protocol.memory_across_runs`` only the first run of each repetition does, and run r
goes on with the memory run r-1 ended with (ReMe's run_bfcl.py). A resume rebuilds that memory
by replaying run r-1's records, and a run that had to run anything again makes every later run
of its repetition run again (they saw its memory). Finished episodes are kept on resume; with
``protocol.retry_errors`` those that ended with status error run again (a learning run also
reruns the chunks after the first one holding an error, see
:func:`~memarena.pipeline.tasks.drop_errors`). The records returned are every record of this
evaluation as written, superseded copies included: the metrics keep the last of each episode
and report the rest. Before a resumed frozen run goes on, what the retrievals of its
finished episodes did to the memory is re-applied from their records
(:func:`~memarena.pipeline.learning.replay_retrievals`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from memarena.agent import EpisodeRunner
from memarena.core import ConfigError
from memarena.pipeline.acquire import load_pinned
from memarena.pipeline.build import Parts
from memarena.pipeline.learning import LearningRun, replay_retrievals
from memarena.pipeline.tasks import cap_tasks, stated
from memarena.results import store as files
from memarena.results.records import EpisodeRecord, latest
from memarena.results.store import verify_snapshot

log = logging.getLogger(__name__)


def evaluate(parts: Parts) -> list[EpisodeRecord]:
    """Run what is missing and return this evaluation's records (see the module docstring)."""
    memory, store, protocol = parts.memory, parts.store, parts.protocol
    tasks = cap_tasks(parts.env.tasks(protocol.eval_split), protocol.max_eval_tasks)
    tasks = stated(parts.env, tasks, protocol.prompt_layout)
    if not tasks:
        raise ConfigError(
            f"env={parts.env.name} has no tasks in split {protocol.eval_split!r} "
            "(protocol.eval_split / protocol.max_eval_tasks)"
        )
    memory.begin_phase("eval")
    views = memory.eval_views()
    wanted = {(v, run, t.id) for v in views for run in range(protocol.runs_total) for t in tasks}
    existing = latest(r for r in store.read_records(files.EPISODES) if r.key in wanted)
    learning = memory.learns and not memory.frozen
    retries = store.read_records(files.REFLECTIONS) if learning else []
    start = _start_snapshot(parts) if learning else None
    for view in views:
        memory.set_view(view)
        stale = False  # memory_across_runs: an earlier run of the repetition ran again
        for run in range(protocol.runs_total):
            first_of_repetition = run % protocol.runs == 0
            stale = stale and not first_of_repetition
            mine = [r for r in existing if r.agent == view and r.run == run and not stale]
            runner = EpisodeRunner(
                parts.env, parts.policy, memory, parts.settings, phase="eval", run=run
            )
            # an episode that ended with an error is not done when a rerun retries it
            kept = [r for r in mine if not (protocol.retry_errors and r.status == "error")]
            log.info(
                "evaluation run %d%s: %d tasks (%d already done%s)",
                run, f" (agent {view})" if view is not None else "", len(tasks), len(kept),
                f", {len(mine) - len(kept)} to retry" if len(kept) < len(mine) else "",
            )  # fmt: skip
            repetition = run // protocol.runs
            # a learning run starts from the acquired memory; with memory_across_runs only the
            # first of a repetition does, the others go on with the memory the last one left
            if start is not None and (first_of_repetition or not protocol.memory_across_runs):
                _load_start(parts, start)
            if learning:
                theirs = [r for r in retries if r.agent == view and r.run == run and not stale]
                ran = LearningRun(parts, run, view, repetition).play(runner, tasks, mine, theirs)
                # the later runs of the repetition saw this run's memory: they run again too
                stale = stale or (protocol.memory_across_runs and ran)
                _save_final(parts, run, view, len(tasks))
            else:
                done = {r.task_id for r in kept}
                # what the finished episodes' retrievals did to the memory (a frozen memory's
                # counters of what it showed), re-applied before the rest run
                replay_retrievals(memory, kept)
                runner.run(
                    [t for t in tasks if t.id not in done],
                    on_finish=lambda r, run=run, view=view, rep=repetition: store.append_record(
                        files.EPISODES,
                        EpisodeRecord.of(
                            r.trajectory,
                            r.outcome,
                            run=run,
                            wall_s=r.wall_s,
                            details=r.details,
                            memory_cost=r.memory_cost,
                            repetition=rep,
                            agent=view,
                        ),  # fmt: skip
                    ),
                )
    memory.set_view(None)
    return [r for r in store.read_records(files.EPISODES) if r.key in wanted]


def _save_final(parts: Parts, run: int, view: str | None, n_tasks: int) -> None:
    """The memory a learning run ended with, beside the acquisition snapshot (EvoGraph's
    Figure 2 case study and scripts/inspect_memory.py read it)."""
    folder = parts.store.final_memory_dir(run, view)
    parts.memory.save(folder)
    info = {"run": run, "agent": view, "n_eval_tasks": n_tasks, "method": parts.memory.name}
    parts.store.mark_snapshot_complete(info, folder)


def _start_snapshot(parts: Parts) -> Path | None:
    """The snapshot a learning evaluation starts from: ``protocol.snapshot_from`` (the run's
    private copy of it) or this run's own (None when the method acquired nothing, e.g.
    EvoGraph's online setting)."""
    if parts.snapshot_from is not None:
        return parts.snapshot_copy or parts.snapshot_from
    return parts.store.memory_dir if parts.store.snapshot_complete() else None


def _load_start(parts: Parts, start: Path) -> None:
    """Load the start snapshot for a run, checked on every load: ``snapshot_from``'s copy
    against the sha256 the run pinned, the run's own against its marker."""
    if parts.snapshot_from is not None:
        load_pinned(parts, parts.memory)
    else:
        verify_snapshot(start)
        parts.memory.load(start)
