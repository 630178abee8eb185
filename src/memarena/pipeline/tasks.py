"""Task lists: caps that keep every domain (and the warning a capped run logs), the chunks a
learning memory is updated by, and what a resume keeps when it retries error episodes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TypeVar

from memarena.core import Env, Task

T = TypeVar("T")


def cap_tasks(tasks: list[Task], limit: int | None) -> list[Task]:
    """The first ``limit`` tasks taken round-robin over domains, so a cap keeps every domain
    represented (8 PDDL tasks = 2 per domain); order within a domain is kept."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    by_domain: dict[str, list[Task]] = {}
    for task in tasks:
        by_domain.setdefault(task.domain, []).append(task)
    picked: list[Task] = []
    queues = [list(reversed(q)) for q in by_domain.values()]
    while len(picked) < limit:
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop())
    return picked


def stated(env: Env, tasks: list[Task], layout: str) -> list[Task]:
    """The tasks as the prompt layout states them: ``reme_bfcl`` (ReMe's released BFCL agent
    sends and retrieves with the benchmark's first request as it stands) makes each goal the
    env's :meth:`~memarena.core.env.Env.first_request`, so the prompt, every memory's query
    and what a memory stores as the task's query are that text; ``memarena`` keeps the env's
    goals (BFCL: ``User: `` and the request)."""
    if layout == "memarena":
        return list(tasks)
    return [dataclasses.replace(t, goal=env.first_request(t)) for t in tasks]


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` cut into consecutive chunks of ``size`` (the last may be shorter). A learning
    memory observes one chunk per update; chunk ``k`` is the record's ``update`` index."""
    size = max(1, int(size))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def drop_errors(
    done: dict[str, T], failed: set[str], task_chunks: Sequence[Sequence[Task]], sequential: bool
) -> dict[str, T]:
    """The finished work a resume keeps when it retries the ``failed`` tasks (episodes that
    ended with status error; ``protocol.retry_errors``). ``done`` maps task id -> its records.

    When episodes do not depend on one another (a frozen memory, or one not read while
    acquiring), only the failed tasks are dropped. When later chunks saw a memory that had
    observed the failed episode (``sequential``), every task after the first chunk holding one
    is dropped too, so the memory's updates are those of a run where it did not fail."""
    if not failed:
        return done
    drop = set(failed)
    if sequential:
        first = next(
            (k for k, c in enumerate(task_chunks) if any(t.id in failed for t in c)), None
        )
        if first is not None:
            drop |= {t.id for c in task_chunks[first + 1 :] for t in c}
    return {tid: value for tid, value in done.items() if tid not in drop}


def cap_warning(experiment: str | None, caps: tuple[object, object]) -> str:
    """The warning for a run with task caps: where the caps come from and how to lift them.
    The demo (the default experiment) is capped on purpose; a paper experiment or ``adhoc`` run
    is capped by ``protocol.max_*`` set on the command line or in its file."""
    counts = f"max_train_tasks={caps[0]}, max_eval_tasks={caps[1]}"
    if experiment == "demo":
        return (
            f"experiment=demo caps tasks ({counts}); choose a paper experiment "
            "(experiment=<file>) or experiment=null for full runs"
        )
    experiment = "null" if experiment is None else experiment
    return (
        f"experiment={experiment} runs with task caps ({counts}); set "
        "protocol.max_train_tasks=null protocol.max_eval_tasks=null for its full task sets"
    )