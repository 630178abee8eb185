"""``ScienceWorldEnv``: the ScienceWorld simulator (30 tasks) behind the Env protocol.

Splits come from the simulator's official variation splits (train/dev/test), capped per task
template as MemCo does (first 10 train variations, first 2 test variations); a JSON task list
(``task_list`` for test, ``train_task_list`` for train; MemCo's ``collab_subsets`` files) replaces
a split with exactly its (task, variation) records. Domains are MemCo's ten task families or the
30 task names. JVMs come from a pool (one per open episode, idle ones reused); ``close`` shuts
every one down.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.options import check_step_budget, plain
from memarena.envs.scienceworld.catalog import Catalog
from memarena.envs.scienceworld.episode import ScienceWorldEpisode
from memarena.envs.scienceworld.prompts import ACTION_FORMAT, FEWSHOT, SYSTEM
from memarena.envs.scienceworld.simulator import SimulatorPool
from memarena.envs.scienceworld.task_lists import load_task_list
from memarena.envs.scienceworld.tasks import (
    FAMILIES,
    PARTITIONS,
    TASK_FAMILY,
    TaskRef,
    check_task_names,
    domain_of,
)

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
PROGRESS = ("score", "subgoals")


def _cap(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or value < 0:
        raise ConfigError(f"memarena: env.{name}={value!r} must be an int >= 0 or null (all).")
    return value


def memco_list(value: str, split: str) -> str:
    """``memco`` -> MemCo's ``split`` list shipped in the package; any other value as given."""
    if value != "memco":
        return value
    return str(files("memarena.envs.scienceworld") / "data" / f"memco_{split}.json")


class ScienceWorldEnv(Env):
    """ScienceWorld behind the :class:`~memarena.core.env.Env` contract.

    Args:
        name: env name in task ids and results.
        step_budget: steps per episode (the runner enforces it).
        jvm_memory: heap cap of each simulator JVM (``-Xmx``), e.g. ``"1g"``.
        task_names: subset of the 30 task names (null = all).
        max_train_variations_per_task, max_test_variations_per_task: first N official train /
            test (and dev) variations per task template (null = all).
        partition: ``memco_families`` (MemCo's 10 task families) or ``task`` (30 domains).
        simplification_str: ScienceWorld simplifications, e.g. ``"easy"`` or
            ``"openDoors,selfWateringFlowerPots"``.
        task_list, train_task_list: JSON lists of ``{sw_task_name, variation_idx}`` records that
            replace the test / train split; ``memco`` for MemCo's lists shipped in the package
            (60 test variations, 10 train variations per template, its task-family groups).
        max_admissible_actions: cap on the admissible-action list of each observation.
        expert_in_actions: add the expert's next gold action to the admissible list when the
            simulator's list lacks it (needed by the expert policy, backbone=scripted, in choice
            mode; a hint for an LLM, so turn it off for LLM runs in choice mode).
        max_idle_jvms: idle simulators kept for reuse.
        describe_tasks: read each task's description from the simulator for ``Task.goal``
            (~30 ms a task, once; cached); off, ``Task.goal`` names only the task and variation
            until ``reset`` returns the real description.
        cache_dir: folder for the variation splits and descriptions (null: this process only).
        progress: ``score`` (score/100) or ``subgoals`` (fraction of AgentBoard's subgoals seen,
            for tasks loaded from AgentBoard's ``.jsonl``; others keep score/100).
        fewshot: worked examples shown in the prompt (one ships; 0: none).
        require_data: accepted for paper experiments; always met (the simulator ships its
            data).
    """

    def __init__(
        self,
        name: str = "scienceworld",
        step_budget: int = 30,
        jvm_memory: str = "1g",
        task_names: Sequence[str] | None = None,
        max_train_variations_per_task: int | None = 10,
        max_test_variations_per_task: int | None = 2,
        partition: str = "memco_families",
        simplification_str: str = "",
        task_list: str | None = None,
        train_task_list: str | None = None,
        max_admissible_actions: int = 200,
        expert_in_actions: bool = False,
        max_idle_jvms: int = 8,
        describe_tasks: bool = True,
        cache_dir: str | None = None,
        progress: str = "score",
        fewshot: int | None = 1,
        require_data: bool = False,
        resources: Mapping[str, int] | None = None,
    ) -> None:
        # what one job on this env takes from a cluster (memarena.launch.resources), not used here
        self.resources = dict(resources or {})
        self.fewshot = None if fewshot is None else int(fewshot)
        step_budget = check_step_budget(step_budget)
        if partition not in PARTITIONS:
            raise ConfigError(f"memarena: env.partition={partition!r}; valid: {list(PARTITIONS)}.")
        if progress not in PROGRESS:
            raise ConfigError(f"memarena: env.progress={progress!r}; valid: {list(PROGRESS)}.")
        self.progress_mode = progress
        self.name = str(name)
        self.step_budget = step_budget
        self.partition = partition
        self.jvm_memory = str(jvm_memory)
        if not re.fullmatch(r"\d+[kKmMgG]?", self.jvm_memory):
            raise ConfigError(
                f"memarena: env.jvm_memory={jvm_memory!r} must be a Java heap size such as 1g "
                "or 768m (it becomes -Xmx of each simulator JVM)."
            )
        self.task_names = check_task_names(plain(task_names))
        self.caps = {
            "train": _cap("max_train_variations_per_task", max_train_variations_per_task),
            "dev": _cap("max_test_variations_per_task", max_test_variations_per_task),
            "test": _cap("max_test_variations_per_task", max_test_variations_per_task),
        }
        self.simplification_str = str(simplification_str or "")
        self.max_admissible_actions = int(max_admissible_actions)
        self.expert_in_actions = bool(expert_in_actions)
        self._lists: dict[str, list[TaskRef]] = {}
        if task_list:
            self._lists["test"] = load_task_list(memco_list(task_list, "test"))
        if train_task_list:
            self._lists["train"] = load_task_list(memco_list(train_task_list, "train"))
        self._pool = SimulatorPool(self.jvm_memory, int(max_idle_jvms))
        self.describe_tasks = bool(describe_tasks)
        self._catalog = Catalog(self._pool, None if cache_dir in (None, "") else str(cache_dir))
        self._tasks: dict[str, list[Task]] = {}

    # -- Env protocol ------------------------------------------------------------------------
    def domains(self) -> list[str]:
        if self.partition == "task":
            return list(self.task_names)
        wanted = {TASK_FAMILY[t] for t in self.task_names}
        return [
            domain_of(ts[0], "memco_families") for fid, (_, ts) in FAMILIES.items() if fid in wanted
        ]

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env=scienceworld has no split {split!r}; valid splits: "
                f"{list(SPLITS)} (protocol.train_split / protocol.eval_split)."
            )
        if split not in self._tasks:
            refs = self._lists.get(split) or self._official(split)
            refs = [r for r in refs if r.task_name in self.task_names]
            if self.describe_tasks:
                todo = [(r.task_name, r.variation) for r in refs if not r.description]
                self._catalog.ensure_descriptions(todo, self.simplification_str)
            self._tasks[split] = [
                self._task(split, r) for r in refs if r.task_name in self.task_names
            ]
            log.info("scienceworld %s: %d tasks", split, len(self._tasks[split]))
        return list(self._tasks[split])

    def _official(self, split: str) -> list[TaskRef]:
        self._catalog.ensure_variations(self.task_names)
        cap = self.caps[split]
        return [
            TaskRef(t, v)
            for t in self.task_names
            for v in self._catalog.variations[t][split][: cap if cap is not None else None]
        ]

    def _task(self, split: str, ref: TaskRef) -> Task:
        family = TASK_FAMILY[ref.task_name]
        key = self._catalog.key(ref.task_name, ref.variation, self.simplification_str)
        goal = (
            ref.description
            or self._catalog.descriptions.get(key)
            or f"ScienceWorld task {ref.task_name} (variation {ref.variation})"
        )
        payload = {
            "task_name": ref.task_name,
            "variation": ref.variation,
            "family": family,
            "simplification_str": self.simplification_str,
        }
        if ref.subgoals:
            payload["subgoals"] = list(ref.subgoals)
        return Task(
            f"{self.name}/{ref.task_name}/{split}/v{ref.variation:04d}",
            self.name,
            split,
            domain_of(ref.task_name, self.partition),
            goal,
            payload,
        )

    def open(self, task: Task) -> ScienceWorldEpisode:
        if task.payload.get("task_name") not in TASK_FAMILY:
            raise ConfigError(f"memarena: task {task.id} is not a ScienceWorld task.")
        return ScienceWorldEpisode(
            task,
            self._pool,
            simplification=str(task.payload.get("simplification_str", self.simplification_str)),
            max_actions=self.max_admissible_actions,
            expert_in_actions=self.expert_in_actions,
            subgoals=task.payload.get("subgoals") if self.progress_mode == "subgoals" else None,
        )

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        return EnvPrompt(
            system=SYSTEM, action_format=ACTION_FORMAT, fewshot=list(FEWSHOT), shown=self.fewshot
        )

    def jvm_pids(self) -> list[int]:
        """Process ids of the JVMs this env holds (idle and in use)."""
        return self._pool.pids()

    def close(self) -> None:
        """Shut every simulator JVM down."""
        self._pool.close()
