"""Task lists: caps that keep every domain, and the chunks a learning memory is updated by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from memarena.core import Task

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


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` cut into consecutive chunks of ``size`` (the last may be shorter). A learning
    memory observes one chunk per update; chunk ``k`` is the record's ``update`` index."""
    size = max(1, int(size))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]
