"""One ScienceWorld episode: a (task, variation) loaded on a pooled JVM.

- Observation text: the task description followed by the room description (reset), then the
  simulator's own reply to each action.
- Admissible actions: the simulator's valid action/object combinations, deduplicated (one
  spelling per (template, objects), the shortest), connect/disconnect only in the electrical
  tasks, actions on the agent itself dropped, one-object actions before two-object ones (those
  round-robin over templates), capped at ``max_actions`` and sorted; ``look around``,
  ``inventory`` and ``wait1`` are always there. With ``expert_in_actions`` the expert's next
  gold action is added (in sorted position) when the list lacks it, so the expert policy's
  constrained choice can take it (the simulator accepts many spellings its list does not
  enumerate, e.g. ``examine X``, ``wait1``).
- Progress: the best ``max(score, 0) / 100`` seen so far, or (``subgoals`` given: AgentBoard's
  task list) the fraction of subgoal sentences that appeared in the replies (1 on success).
  Success: the task reports completion with score 100. A negative score (e.g. focusing on the
  wrong object) ends the episode as a failure.
- Ambiguous inputs ("Ambiguous request: ...", e.g. several identical seeds) are left to the
  agent, as in the simulator: the reply lists numbered readings, the numbers join the
  admissible actions (feedback ``ambiguous``), and the next input is either a number (that
  reading) or a new command (the ambiguous one is dropped). The gold paths do both.
- Expert: the simulator's gold action sequence, followed step by step; an agent action equal to
  the next gold action advances it. After a deviation the expert still returns the next gold
  action (it does not replan; a deviation that changed the world can make the rest of the gold
  path fail). The gold path is generated at reset when ``expert_in_actions`` is on, otherwise
  on the first ``expert_action`` call (loading with a gold path costs 0.1-4 s, ~20 s on
  mendelian-genetics-unknown-plant); steps already taken are replayed on the reloaded task.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable
from typing import Any

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.scienceworld.simulator import Simulator, SimulatorError, SimulatorPool
from memarena.envs.scienceworld.tasks import ELECTRICAL_TASKS

INVALID_MESSAGE = "No known action matches that input."
AMBIGUOUS_PREFIX = "Ambiguous request"
ALWAYS_ACTIONS = ("look around", "inventory", "wait1")
DONE_MESSAGE = "The task is over; no further actions are taken."
# "reset task" would restart the simulator's episode under the agent; it is refused.
BLOCKED_ACTIONS = frozenset({"reset task"})


def _norm(action: str) -> str:
    return " ".join(action.strip().lower().split())


def _ambiguity_choices(text: str) -> list[str]:
    """The option numbers of an "Ambiguous request" reply ("0:\tmove ...", "1:\t...")."""
    if not text.lstrip().startswith(AMBIGUOUS_PREFIX):
        return []
    return [m.group(1) for m in re.finditer(r"^(\d+):", text, re.MULTILINE)]


def _subgoal_matcher(subgoal: str) -> Callable[[str], bool]:
    """AgentBoard's subgoals are reply sentences, some of them regular expressions (``the
    thermometer measures a temperature of (-?\\d+) degrees celsius``): a subgoal is reached when
    a reply contains it literally or matches it as a pattern."""
    literal = _norm(subgoal)
    try:
        pattern = re.compile(literal, re.IGNORECASE)
    except re.error:
        pattern = None
    return lambda text: literal in text or bool(pattern and pattern.search(text))


class ScienceWorldEpisode(Episode):
    def __init__(
        self,
        task: Task,
        pool: SimulatorPool,
        simplification: str = "",
        max_actions: int = 200,
        expert_in_actions: bool = False,
        subgoals: list[str] | None = None,
    ) -> None:
        self.task = task
        self.task_name = str(task.payload["task_name"])
        self.variation = int(task.payload["variation"])
        self.simplification = simplification
        self.max_actions = max_actions
        self.expert_in_actions = expert_in_actions
        self._pool = pool
        self._sim: Simulator | None = None
        self._history: list[str] = []  # inputs sent to the simulator, for a gold-path replay
        self._gold: list[str] | None = None
        self._gold_index = 0
        self.score = 0
        self.progress = 0.0
        self.done = False
        self.success = False
        self.goal = task.goal
        self._state: tuple[str, str] = ("", "")
        self.subgoals = [_subgoal_matcher(g) for g in subgoals or []]
        self._subgoals_seen: set[int] = set()
        self._choices: list[str] = []  # the numbers an ambiguous input asks to choose from

    # -- helpers -----------------------------------------------------------------------------
    @property
    def sim(self) -> Simulator:
        if self._sim is None:
            self._sim = self._pool.acquire()
        return self._sim

    def _load(self, gold: bool) -> None:
        self.sim.load(self.task_name, self.variation, self.simplification, gold)
        self.sim.reset()
        self.sim.step("look around")  # the simulator's first move, as the package's reset does

    def _snapshot(self) -> tuple[str, str]:
        return self.sim.look(), self.sim.inventory()

    def admissible_actions(self) -> list[str]:
        electrical = self.task_name in ELECTRICAL_TASKS
        best: dict[tuple[Any, ...], str] = {}
        for entry in self.sim.valid_actions():
            text = _norm(str(entry["action"]))
            words = text.split()
            if not electrical and words[0] in ("connect", "disconnect"):
                continue
            if "agent" in words or text in BLOCKED_ACTIONS:
                continue
            key = (entry.get("template_id"), tuple(entry.get("obj_ids", ())))
            if key not in best or len(text) < len(best[key]):
                best[key] = text
        # One-object actions first; two-object ones round-robin over their templates, so a cap
        # keeps some of every kind (move, pour, use, ...) rather than the alphabetical first.
        single = sorted({a for k, a in best.items() if len(k[1]) <= 1} - set(ALWAYS_ACTIONS))
        by_template: dict[Any, list[str]] = {}
        for k, a in sorted(best.items(), key=lambda item: item[1]):
            if len(k[1]) > 1 and a not in ALWAYS_ACTIONS:
                by_template.setdefault(k[0], []).append(a)
        double = [a for row in itertools.zip_longest(*by_template.values()) for a in row if a]
        room = max(0, self.max_actions - len(ALWAYS_ACTIONS))
        actions = sorted({*[*single, *double][:room], *ALWAYS_ACTIONS, *self._choices})
        if self.expert_in_actions and self._gold is not None:
            nxt = self._next_gold()
            if nxt is not None and nxt not in actions:
                bisect.insort(actions, nxt)
        return actions

    def _observation(self, text: str, kind: str) -> Observation:
        info: dict[str, Any] = {
            "task_name": self.task_name,
            "variation": self.variation,
            "score": self.score,
            "action_kind": kind,
        }
        actions = None if self.done else self.admissible_actions()
        return Observation(text, self.goal, actions, info)

    # -- Episode protocol --------------------------------------------------------------------
    def reset(self) -> Observation:
        if self.expert_in_actions and self._gold is None:
            self._gold = self._load_gold()  # the first observation already lists the gold action
        else:
            self._load(gold=self._gold is not None)
        self._history = []
        self._gold_index = 0
        self.score, self.progress, self.done, self.success = 0, 0.0, False, False
        self._subgoals_seen = set()
        self._choices = []
        desc = self.sim.task_description().strip()
        desc = desc.removeprefix("Task Description:").strip()
        self.goal = desc or self.task.goal
        self._state = self._snapshot()
        text = f"Task: {self.goal}\n{self._state[0].strip()}"
        return self._observation(text, "reset")

    def step(self, action: str) -> StepResult:
        if self.done:
            obs = Observation(DONE_MESSAGE, self.goal, None, {"action_kind": "done"})
            fb = Feedback(False, False, "done")
            return StepResult(obs, 0.0, True, self.success, self.progress, fb)
        action = _norm(action)
        if action in BLOCKED_ACTIONS:
            obs = self._observation(INVALID_MESSAGE, "invalid")
            fb = Feedback(False, False, "invalid_action")
            return StepResult(obs, 0.0, False, False, self.progress, fb)
        before_score = self.score
        text, score, completed = self._send(action)
        self._choices = _ambiguity_choices(text)
        self._advance_gold(action)
        invalid = text.strip().startswith(INVALID_MESSAGE)
        state = self._snapshot()
        changed = state != self._state or score != before_score
        self._state = state
        self.score = score
        self.success = completed and score >= 100
        self.progress = max(self.progress, self._progress(text, score))
        failed = score < 0
        self.done = self.success or failed or completed
        label = "invalid_action" if invalid else ("task_failed" if failed else None)
        if self._choices:
            label = "ambiguous"
        obs = self._observation(text.strip(), "invalid" if invalid else "action")
        reward = (score - before_score) / 100.0
        return StepResult(
            obs,
            reward,
            self.done,
            self.success,
            self.progress,
            Feedback(not invalid, changed, label),
        )

    def _progress(self, text: str, score: int) -> float:
        if not self.subgoals:
            return min(max(score, 0) / 100.0, 1.0)
        said = _norm(text)
        self._subgoals_seen |= {i for i, match in enumerate(self.subgoals) if match(said)}
        return 1.0 if self.success else len(self._subgoals_seen) / len(self.subgoals)

    def _send(self, action: str) -> tuple[str, int, bool]:
        self._history.append(action)
        try:
            return self.sim.step(action)
        except SimulatorError as exc:
            raise SimulatorError(f"{exc} (task {self.task.id}, action {action!r})") from exc

    # -- expert ------------------------------------------------------------------------------
    def _next_gold(self) -> str | None:
        if self._gold is None or self._gold_index >= len(self._gold):
            return None
        return self._gold[self._gold_index]

    def _advance_gold(self, action: str) -> None:
        nxt = self._next_gold()
        if nxt is not None and _norm(nxt) == action:
            self._gold_index += 1

    def expert_action(self) -> str | None:
        """The next action of the simulator's gold path (None once it is used up or done)."""
        if self.done:
            return None
        if self._gold is None:
            self._gold = self._load_gold()
        return self._next_gold()

    def _load_gold(self) -> list[str]:
        history = list(self._history)
        self._load(gold=True)
        gold = self.sim.gold_actions()
        for action in history:  # put the world back where the agent left it
            self.sim.step(action)
        self._history = history
        index = 0
        for action in history:
            if index < len(gold) and _norm(gold[index]) == _norm(action):
                index += 1
        self._gold_index = index
        return gold

    def close(self) -> None:
        """Give the JVM back to the pool (a dead one is shut down instead)."""
        if self._sim is not None:
            sim, self._sim = self._sim, None
            self._pool.release(sim)
