"""One PDDL episode behind the text interface.

Actions are the action name followed by its arguments, e.g. ``"pick ball1 rooma left"``
(case, extra spaces, brackets and commas are ignored). Meta-actions never change the state:
``check valid actions`` (every domain) lists the applicable actions, ``look around`` (domains
whose steps show only the change: barman, tyreworld) describes the whole state.
"""

from __future__ import annotations

from typing import Any

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.pddl.planner import PlannerConfig, get_expert
from memarena.envs.pddl.render import describe_change, describe_state, goal_text
from memarena.envs.pddl.simulator import GroundedProblem, normalize_action
from memarena.envs.pddl.specs import (
    CHECK_VALID_ACTIONS,
    INVALID_ACTION_MESSAGE,
    LOOK_AROUND,
    DomainSpec,
    meta_actions,
)

DONE_MESSAGE = "The goal is already reached; the episode is over."


class PDDLEpisode(Episode):
    """Episode over a grounded problem; ``progress`` is the best goal fraction seen so far."""

    def __init__(
        self,
        task: Task,
        problem: GroundedProblem,
        spec: DomainSpec,
        planner: PlannerConfig | None = None,
    ) -> None:
        self.task = task
        self.problem = problem
        self.spec = spec
        self.planner = planner or PlannerConfig()
        self.goal = goal_text(problem.goals, spec)
        self._meta = meta_actions(spec)
        self.state: frozenset[str] = problem.initial_state
        self.progress = 0.0
        self.done = False
        self._expert_gave_up = False

    # -- helpers -----------------------------------------------------------------------------
    def _fraction(self) -> float:
        goals = self.problem.goals
        return len(goals & self.state) / len(goals) if goals else 1.0

    def admissible_actions(self) -> list[str]:
        """Applicable actions (natural order) followed by the meta-actions."""
        return [a.text for a in self.problem.applicable(self.state)] + list(self._meta)

    def describe(self) -> str:
        return describe_state(self.state, self.spec)

    def _observation(self, text: str, kind: str) -> Observation:
        info: dict[str, Any] = {
            "domain": self.task.domain,
            "action_kind": kind,
            "goal_satisfied": len(self.problem.goals & self.state),
            "goal_total": len(self.problem.goals),
        }
        return Observation(text, self.goal, self.admissible_actions(), info)

    # -- Episode protocol --------------------------------------------------------------------
    def reset(self) -> Observation:
        self.state = self.problem.initial_state
        self.progress = self._fraction()
        self.done = self.problem.goals <= self.state
        self._expert_gave_up = False
        text = f"{self.describe()}\n{self.goal}"
        return self._observation(text, "reset")

    def step(self, action: str) -> StepResult:
        if self.done:
            obs = self._observation(DONE_MESSAGE, "done")
            return StepResult(obs, 0.0, True, True, self.progress, Feedback(False, False, "done"))
        norm = normalize_action(action)
        if norm == CHECK_VALID_ACTIONS:
            text = "Valid actions are: " + ", ".join(self.admissible_actions()) + "."
            return self._result(text, "meta", Feedback(True, False))
        if norm == LOOK_AROUND and LOOK_AROUND in self._meta:
            return self._result(self.describe(), "meta", Feedback(True, False))
        act = self.problem.lookup(norm)
        if act is None or not act.pre <= self.state:
            known = act is not None or self.problem.is_known_form(norm)
            label = "precondition" if known else "invalid_action"
            return self._result(INVALID_ACTION_MESSAGE, "invalid", Feedback(False, False, label))
        before = self.state
        self.state = act.apply(before)
        text = describe_change(self.state - before, before - self.state, self.spec)
        if self.spec.full_state_each_step:
            text += f"\nCurrent state: {self.describe()}"
        return self._result(text, "action", Feedback(True, self.state != before))

    def _result(self, text: str, kind: str, feedback: Feedback) -> StepResult:
        self.progress = max(self.progress, self._fraction())
        success = self.problem.goals <= self.state
        self.done = success
        obs = self._observation(text, kind)
        return StepResult(obs, 1.0 if success else 0.0, success, success, self.progress, feedback)

    def expert_action(self) -> str | None:
        """Next action of a plan from the current state (replans after a deviation).

        None when the goal is reached or no plan is found within the planner's node limits.
        Once a search has failed (barman has real dead ends: a shaker holding two ingredients
        of no cocktail can never be emptied), every state after it is reachable from a state
        without a plan, so the expert stops searching for the rest of the episode and answers
        from its cache only (None off every known plan).
        """
        if self.done:
            return None
        expert = get_expert(self.problem, self.planner)
        action = expert.next_action(self.state, search=not self._expert_gave_up)
        if action is None:
            self._expert_gave_up = True
        return action

    def close(self) -> None:
        """Nothing to release (the grounding and the expert are shared caches)."""
