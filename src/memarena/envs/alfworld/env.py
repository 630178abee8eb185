"""``AlfWorldEnv``: ALFWorld households on the real TextWorld engine.

Tasks come from the official data (``data_path``, the ``json_2.1.1`` layout; optionally
restricted and ordered by MemCo's task lists, ``task_list``: ``memco`` for the lists shipped in
the package) or, when no data is configured, from the embedded household suite generated into
``cache_dir`` (a stand-in named ``alfworld_suite``, conf/env/alfworld.yaml). Splits: ``train``,
``valid_seen`` (familiar layout), ``valid_unseen`` (held-out layout), and ``test`` = the union
of ``test_splits``. Domains are MemCo's four scene domains. The prompt shows the worked example
of the task's type (``fewshot``; written by ``scripts/build_alfworld_examples.py``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.alfworld import prompts
from memarena.envs.alfworld.episode import AlfWorldEpisode
from memarena.envs.alfworld.official import (
    OFFICIAL_SPLITS,
    GameRef,
    read_task_list,
    scan_split,
    short_type,
    split_root,
)
from memarena.envs.alfworld.scenes import DOMAINS, TASK_TYPES
from memarena.envs.options import check_official_data, check_step_budget, choose_names, plain

log = logging.getLogger(__name__)

SPLITS = (*OFFICIAL_SPLITS, "test")
SPLIT_ALIASES = {"familiar": "valid_seen", "held_out": "valid_unseen"}
SUITE_DEFAULTS = {
    "n_train": 8,
    "n_valid_seen": 4,
    "n_valid_unseen": 4,
    "n_layouts": 6,
    "n_heldout_layouts": 2,
    "seed": 0,
    "max_expert_steps": 30,
    "workers": 0,
}


MEMCO_LISTS = "memco"  # env.task_list value: MemCo's lists shipped in the package
EXAMPLES_FILE = Path(str(files("memarena.envs.alfworld") / "data" / "fewshot.json"))


@functools.cache
def worked_examples() -> dict[str, str]:
    """Task type -> worked example (``scripts/build_alfworld_examples.py`` writes them)."""
    if not EXAMPLES_FILE.is_file():
        return {}
    return json.loads(EXAMPLES_FILE.read_text())


class AlfWorldEnv(Env):
    """ALFWorld behind the :class:`~memarena.core.env.Env` contract.

    Args:
        name: env name in task ids and results (``alfworld``).
        step_budget: steps per episode (MemCo: 30).
        data_path: folder with the official data (``json_2.1.1`` or its parent); None/"" uses
            the embedded household suite.
        task_list: MemCo task-list file or folder (``<domain>__<split>.json``), or ``memco``
            for MemCo's lists shipped in the package; with official data it selects and orders
            the games of each split.
        domains: subset of kitchen, living_room, bedroom, bathroom.
        task_types: subset of the six task types (short names, see ``scenes.TASK_TYPES``).
        test_splits: splits merged into ``test`` (MemCo: familiar + held-out layouts).
        cache_dir: where the household suite is generated.
        suite: generator sizes (per domain): n_train, n_valid_seen, n_valid_unseen, n_layouts,
            n_heldout_layouts, seed, max_expert_steps, workers (0 = all CPUs).
        seed: seeds the expert's random choices per episode.
        fewshot: worked examples shown in the prompt (the task type's one; 0: none).
        require_data: stop unless the official data is configured (paper experiments set it).
    """

    def __init__(
        self,
        name: str = "alfworld",
        step_budget: int = 30,
        data_path: str | None = None,
        task_list: str | None = None,
        domains: Sequence[str] = DOMAINS,
        task_types: Sequence[str] = tuple(TASK_TYPES),
        test_splits: Sequence[str] = ("valid_seen", "valid_unseen"),
        cache_dir: str | None = None,
        suite: Mapping[str, Any] | None = None,
        seed: int = 0,
        fewshot: int | None = 1,
        require_data: bool = False,
    ) -> None:
        self.name = str(name)
        self.stand_in = check_official_data(
            bool(require_data), data_path not in (None, "", "null"), "alfworld",
            "set ALFWORLD_DATA or env.data_path to the folder holding json_2.1.1/",
            "alfworld_suite",
        )  # fmt: skip
        self.fewshot = None if fewshot is None else int(fewshot)
        step_budget = check_step_budget(step_budget)
        self.step_budget = step_budget
        self._domains = choose_names("domains", domains, DOMAINS)
        self._task_types = choose_names("task_types", task_types, tuple(TASK_TYPES))
        self._test_splits = choose_names("test_splits", test_splits, OFFICIAL_SPLITS)
        self.seed = int(seed)
        suite = dict(plain(suite) or {})
        bad = set(suite) - set(SUITE_DEFAULTS)
        if bad:
            raise ConfigError(
                f"memarena: env.suite.{sorted(bad)[0]} is not a suite option; "
                f"valid: {', '.join(SUITE_DEFAULTS)}."
            )
        self._suite = {**SUITE_DEFAULTS, **suite}
        if not 0 < self._suite["n_heldout_layouts"] < self._suite["n_layouts"]:
            raise ConfigError("memarena: env.suite needs 0 < n_heldout_layouts < n_layouts.")
        self.cache_dir = Path(os.path.expanduser(str(cache_dir or "~/.cache/memarena/alfworld")))
        self.data_path = (
            None if data_path in (None, "", "null") else Path(os.path.expanduser(str(data_path)))
        )
        self._root: Path | None = None
        if self.data_path is not None:
            self._root = split_root(self.data_path)
            if self._root is None:
                raise ConfigError(
                    f"memarena: env=alfworld has no official data at {self.data_path} "
                    "(env.data_path).\nSet ALFWORLD_DATA or env.data_path to a folder holding "
                    "json_2.1.1/, or leave both unset to use the embedded household suite "
                    f"(generated into {self.cache_dir})."
                )
        if task_list == MEMCO_LISTS:
            task_list = str(files("memarena.envs.alfworld") / "data" / "memco_task_lists.json")
        self.task_list = (
            None if task_list in (None, "") else Path(os.path.expanduser(str(task_list)))
        )
        if self.task_list is not None and not self.task_list.exists():
            raise ConfigError(
                f"memarena: env.task_list={self.task_list} does not exist "
                "(a MemCo <domain>__<split>.json file or a folder of them)."
            )
        self._tasks: dict[str, list[Task]] | None = None

    # -- task sources ------------------------------------------------------------------------
    def _refs(self) -> dict[str, list[GameRef]]:
        alfred_types = {TASK_TYPES[t] for t in self._task_types}
        if self._root is None:
            self._root = self._generate()
        refs = {
            s: [r for r in scan_split(self._root, s, alfred_types) if r.domain in self._domains]
            for s in OFFICIAL_SPLITS
        }
        if self.task_list is not None:
            try:
                wanted = read_task_list(self.task_list)
            except (ValueError, KeyError) as exc:
                raise ConfigError(f"memarena: env.task_list: {exc}.") from None
            for split in OFFICIAL_SPLITS:
                by_key = {r.key: r for r in refs[split]}
                keys = [k for k, d in wanted.get(split, []) if d in self._domains]
                missing = [k for k in keys if k not in by_key]
                if missing:
                    log.warning(
                        "alfworld task_list: %d %s games not found under %s (e.g. %s)",
                        len(missing),
                        split,
                        self._root,
                        missing[0],
                    )
                refs[split] = [by_key[k] for k in keys if k in by_key]
        return refs

    def _generate(self) -> Path:
        from memarena.envs.alfworld.generator import SuiteSpec, generate_suite

        s = self._suite
        spec = SuiteSpec(
            tuple(self._domains),
            tuple(self._task_types),
            int(s["n_train"]),
            int(s["n_valid_seen"]),
            int(s["n_valid_unseen"]),
            int(s["n_layouts"]),
            int(s["n_heldout_layouts"]),
            int(s["seed"]),
            int(s["max_expert_steps"]),
        )
        workers = int(s["workers"]) or (os.cpu_count() or 1)
        t0 = time.perf_counter()
        out = generate_suite(spec, self.cache_dir, workers=workers)
        log.warning(
            "env=alfworld has no official data (ALFWORLD_DATA / env.data_path unset): this run "
            "plays the embedded household suite at %s (%.1f s), a stand-in named %s, and "
            "metrics.json flags it stand_in_data. For ALFWorld itself set ALFWORLD_DATA (paper "
            "experiments require it: env.require_data=true).",
            out, time.perf_counter() - t0, self.name,
        )  # fmt: skip
        return out

    def _build(self) -> dict[str, list[Task]]:
        refs = self._refs()
        tasks: dict[str, list[Task]] = {}
        for split in OFFICIAL_SPLITS:
            tasks[split] = [self._task(r, i) for i, r in enumerate(refs[split])]
        tasks["test"] = [t for s in self._test_splits for t in tasks[s]]
        log.info("alfworld tasks: %s", {s: len(v) for s, v in tasks.items()})
        return tasks

    def _task(self, r: GameRef, i: int) -> Task:
        payload = {
            "game_file": r.game_file,
            "key": r.key,
            "task_type": r.task_type,
            "task_family": short_type(r.task_type),
            "pddl_params": r.pddl_params,
            "scene": r.scene,
            "source": "official" if self.data_path else "generated",
        }
        if r.expert_seed:
            payload["expert_seed"] = r.expert_seed
        return Task(
            f"{self.name}/{r.domain}/{r.split}/{i:04d}",
            self.name,
            r.split,
            r.domain,
            r.goal,
            payload,
        )

    # -- Env protocol ------------------------------------------------------------------------
    def domains(self) -> list[str]:
        return list(self._domains)

    def tasks(self, split: str) -> list[Task]:
        split = SPLIT_ALIASES.get(split, split)
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env=alfworld has no split {split!r}; valid splits: {list(SPLITS)} "
                f"or {list(SPLIT_ALIASES)} (protocol.train_split / protocol.eval_split)."
            )
        if self._tasks is None:
            self._tasks = self._build()
        return list(self._tasks[split])

    def open(self, task: Task) -> AlfWorldEpisode:
        return AlfWorldEpisode(task, seed=self.seed)

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        domains = (task.domain,) if task is not None else tuple(self._domains)
        hints = [prompts.DOMAIN_HINTS[d] for d in domains if d in prompts.DOMAIN_HINTS]
        system = prompts.SYSTEM + ("\n" + "\n".join(hints) if len(hints) == 1 else "")
        examples = worked_examples()
        family = task.payload.get("task_family") if task is not None else None
        # the task type's example first (AgentBoard / G-Memory / MemCo pick it by type)
        ordered = [examples[family]] if family in examples else []
        ordered += [text for t, text in examples.items() if t != family]
        return EnvPrompt(
            system=system,
            action_format=prompts.ACTION_FORMAT,
            fewshot=ordered,
            shown=self.fewshot,
        )

    def close(self) -> None:
        """Episodes own their engines; nothing shared to release."""
