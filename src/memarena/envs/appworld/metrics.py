"""AppWorld's two metrics over a run's episodes (``episodes.jsonl`` rows or EpisodeRecords).

- TGC, Task Goal Completion: the share of tasks whose evaluation tests all pass (ReMe reports
  it as the success rate);
- SGC, Scenario Goal Completion: the share of scenarios (task id ``<scenario>_<n>``) whose
  tasks all pass.

With several runs of a task (ReMe's Avg@4; runs of every repetition), each (run, task) counts
once for TGC and a scenario
passes in a run when all its tasks pass in that run; both are averaged over runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from memarena.envs.appworld.data import scenario_of


def _get(record: Any, key: str, default: Any = None) -> Any:
    if isinstance(record, Mapping):
        return record.get(key, default)
    return getattr(record, key, default)


def appworld_task_id(record: Any) -> str:
    """The AppWorld task id of an episode: the payload's, else the last part of ``task_id``."""
    return str(_get(record, "task_id", "")).rsplit("/", 1)[-1]


def goal_completion(records: Iterable[Any]) -> dict[str, float | int]:
    """``{"tgc", "sgc", "n_tasks", "n_scenarios"}`` (rates in [0, 1]) of ``records``."""
    by_run: dict[Any, dict[str, bool]] = defaultdict(dict)
    for r in records:
        run = (_get(r, "agent"), _get(r, "repetition", 0), _get(r, "run", 0))
        task = appworld_task_id(r)
        by_run[run][task] = by_run[run].get(task, True) and bool(_get(r, "success", False))
    if not by_run:
        return {"tgc": 0.0, "sgc": 0.0, "n_tasks": 0, "n_scenarios": 0}
    tgcs, sgcs = [], []
    for tasks in by_run.values():
        scenarios: dict[str, bool] = defaultdict(lambda: True)
        for task, ok in tasks.items():
            scenarios[scenario_of(task)] &= ok
        tgcs.append(sum(tasks.values()) / len(tasks))
        sgcs.append(sum(scenarios.values()) / len(scenarios))
    first = next(iter(by_run.values()))
    return {
        "tgc": sum(tgcs) / len(tgcs),
        "sgc": sum(sgcs) / len(sgcs),
        "n_tasks": len(first),
        "n_scenarios": len({scenario_of(t) for t in first}),
    }
