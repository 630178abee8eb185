"""``RecallEnv``: a generated sanity benchmark where only memory can solve the test tasks.

See :mod:`memarena.envs.recall` for what it measures and what it does not.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.examples import play_expert, render_example
from memarena.envs.options import check_step_budget, choose_names, plain
from memarena.envs.recall.episode import RecallEpisode
from memarena.envs.recall.generator import (
    DISTRACTORS,
    DOMAIN_NAMES,
    DOMAINS,
    Family,
    families,
    goal_and_place,
    stage_options,
)

log = logging.getLogger(__name__)

SPLITS = ("train", "test")

SYSTEM = (
    "You operate locked devices. Each device opens with a secret code: a fixed sequence of "
    "actions, one per step, the same every time you meet that device, wherever it stands and "
    "however the task is worded. At each step choose one of the actions you are offered. The "
    "right action moves the device to its next stage; a wrong one locks it for good. Some "
    "devices have a note beside them giving the code; when there is none, only what you "
    "remember of that device can tell you the code."
)
ACTION_FORMAT = "Reply with exactly one of the offered actions and nothing else."


def _count(key: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"memarena: env.{key}={value!r} must be an int >= {low}.")
    return value


def _code_length(value: Any) -> tuple[int, int]:
    value = plain(value)
    pair = [value, value] if isinstance(value, int) else value
    if (
        not isinstance(pair, list | tuple)
        or len(pair) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        or not 1 <= pair[0] <= pair[1]
    ):
        raise ConfigError(
            f"memarena: env.code_length={value!r} must be an int >= 1 or [min, max] with "
            "1 <= min <= max, e.g. env.code_length=[3,4]."
        )
    return int(pair[0]), int(pair[1])


def _check_vocabulary(families: int, longest: int, options: int, distractors: str) -> None:
    """Every domain has 24 actions: enough for the codes and the distractors."""
    vocab = min(len(v) for _, v in DOMAINS.values())
    need = families * longest + options - 1 if distractors == "random" else max(longest, options)
    if need > vocab:
        raise ConfigError(
            f"memarena: env=recall needs {need} actions per domain (env.families x "
            f"env.code_length max{' + env.options - 1' if distractors == 'random' else ''}) "
            f"but a domain has {vocab}; lower env.families, env.code_length or env.options"
            + (", or use env.distractors=code." if distractors == "random" else ".")
        )


class RecallEnv(Env):
    """Recall: device codes learnt on training tasks, needed on test tasks.

    Args:
        name: env name in task ids and results.
        step_budget: steps per episode (a code has at most ``code_length`` max steps; extra
            steps only matter for replies that are not an offered action).
        domains: device kinds, subset of vault, terminal, shrine (MemCo: one agent per domain).
        families: devices (task families) per domain, each with its own code.
        code_length: steps of a code, an int or ``[min, max]`` (drawn per family).
        options: admissible actions per step (the right one and ``options - 1`` distractors);
            chance of a blind guess over a task is ``(1 / options) ** code_length``.
        distractors: ``random`` (actions in no code of the domain: any memory of the domain
            helps) or ``code`` (first from the codes: the family's other stages, then the
            domain's other families; only the right episode helps).
        n_train: training tasks per family (each shows the code on a note).
        n_test: test tasks per family (no note, another place, a paraphrased goal).
        seed: generator seed (conf/env/recall.yaml sets the run's seed: each seed is a new set
            of names and codes).
        fewshot: worked examples in the prompt (one per domain exists, on a device of its own).
    """

    def __init__(
        self,
        name: str = "recall",
        step_budget: int = 6,
        domains: Sequence[str] = ("vault", "terminal"),
        families: int = 3,
        code_length: int | Sequence[int] = 3,
        options: int = 4,
        distractors: str = "random",
        n_train: int = 2,
        n_test: int = 1,
        seed: int = 0,
        fewshot: int | None = 1,
    ) -> None:
        self.name = str(name)
        self.step_budget = check_step_budget(step_budget)
        self._domains = choose_names("domains", domains, DOMAIN_NAMES)
        self.n_families = _count("families", families, 1)
        self.options = _count("options", options, 2)
        self.code_length = _code_length(code_length)
        if distractors not in DISTRACTORS:
            raise ConfigError(
                f"memarena: env.distractors={distractors!r}; valid: {list(DISTRACTORS)}."
            )
        _check_vocabulary(self.n_families, self.code_length[1], self.options, distractors)
        self.distractors = distractors
        self.n = {"train": _count("n_train", n_train, 0), "test": _count("n_test", n_test, 0)}
        self.seed = int(seed)
        self.fewshot = None if fewshot is None else int(fewshot)
        self._tasks: dict[str, list[Task]] | None = None

    # -- Env protocol ------------------------------------------------------------------------
    def domains(self) -> list[str]:
        return list(self._domains)

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env=recall has no split {split!r}; valid splits: {list(SPLITS)}."
            )
        if self._tasks is None:
            self._tasks = self._build_tasks()
        return list(self._tasks[split])

    def _build_tasks(self) -> dict[str, list[Task]]:
        fams = families(tuple(self._domains), self.n_families, self.code_length, self.seed)
        out: dict[str, list[Task]] = {s: [] for s in SPLITS}
        for split in SPLITS:
            # tasks interleave the families (round-robin), so a capped run still covers them
            for i in range(self.n[split]):
                for f in fams:
                    out[split].append(self._task(f, fams, split, i))
        log.info("recall tasks: %s", {s: len(ts) for s, ts in out.items()})
        return out

    def _task(self, f: Family, fams: list[Family], split: str, i: int) -> Task:
        tid = f"{self.name}/{f.domain}/{split}/f{f.index:02d}-{i:02d}"
        goal, place = goal_and_place(f, split, i, self.seed)
        options = [
            stage_options(f, s, self.options, self.distractors, fams, tid)
            for s in range(len(f.code))
        ]
        payload = {
            "device": f.device,
            "code": list(f.code),
            "options": options,
            "place": place,
            "note": split == "train",
            "family": f"{f.domain}/{f.index}",
            "chance": (1.0 / self.options) ** len(f.code),
        }
        return Task(tid, self.name, split, f.domain, goal, payload)

    def open(self, task: Task) -> RecallEpisode:
        return RecallEpisode(task)

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        """The instructions and one worked example per domain (the task's domain first)."""
        first = [task.domain] if task is not None else []
        order = tuple(dict.fromkeys(first + list(self._domains)))
        return EnvPrompt(
            system=SYSTEM,
            action_format=ACTION_FORMAT,
            fewshot=[domain_example(d, self.options) for d in order],
            shown=self.fewshot,
        )

    def run_metrics(self, records: Sequence[Any]) -> dict[str, Any]:
        """``chance_success``: the success rate a uniform guess over the offered actions would
        have on the evaluated tasks (mean of ``(1 / options) ** code_length``)."""
        tasks = {t.id: t for t in self.tasks("test") + self.tasks("train")}
        chances = [tasks[_task_id(r)].payload["chance"] for r in records if _task_id(r) in tasks]
        return {"chance_success": sum(chances) / len(chances)} if chances else {}


def _task_id(record: Any) -> str:
    if isinstance(record, dict):
        return str(record.get("task_id") or (record.get("task") or {}).get("id") or "")
    return str(getattr(record, "task_id", ""))


@functools.cache
def domain_example(domain: str, options: int) -> str:
    """The domain's worked example: the expert on a training-style task (the note shown) of a
    device of its own, from the generator's ``example`` stream (never a train or test device)."""
    kind, vocab = DOMAINS[domain]
    (f,) = families((domain,), 1, (2, 2), seed=-1)
    f = Family(domain, 0, f"the practice {kind}", f.code)
    tid = f"example/{domain}"
    task = Task(tid, "recall", "example", domain, f"Open {f.device}.", {
        "device": f.device, "code": list(f.code), "place": "training room", "note": True,
        "options": [stage_options(f, s, min(options, len(vocab)), "random", [f], tid)
                    for s in range(len(f.code))],
    })  # fmt: skip
    initial, turns = play_expert(RecallEpisode(task), max_steps=10)
    return render_example(task.goal, initial, turns)
