"""Task caps keep every domain represented."""

from memarena.core import Task
from memarena.pipeline import cap_tasks


def test_task_cap_is_round_robin_over_domains():
    tasks = [Task(f"{d}{i}", "e", "test", d, "g") for d in "abc" for i in range(3)]
    assert [t.id for t in cap_tasks(tasks, 5)] == ["a0", "b0", "c0", "a1", "b1"]
    assert cap_tasks(tasks, None) == tasks and cap_tasks(tasks, 99) == tasks
