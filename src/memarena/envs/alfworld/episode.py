"""One ALFWorld game behind the Episode protocol.

The engine decides validity (an action outside the admissible list answers "Nothing happens.")
and success (``won``). Progress is the best fraction of the task's subgoals seen so far,
computed from the engine's facts (see :func:`subgoals`). The handcoded expert's next action
comes with every engine state; it draws from a private random state, so replays are exact.
"""

from __future__ import annotations

import re
from typing import Any

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.alfworld.engine import private_random_state, seeded_global_random, start_game

NOTHING_HAPPENS = "Nothing happens."
DONE_MESSAGE = "The task is already complete; the episode is over."
THINK_REPLY = "OK."
BANNER = "-= Welcome to TextWorld, ALFRED! =-"
VERBS = frozenset(
    {
        "go",
        "open",
        "close",
        "take",
        "move",
        "put",
        "use",
        "heat",
        "cool",
        "clean",
        "slice",
        "examine",
        "look",
        "inventory",
        "help",
    }
)
# Predicates that record attention, not a change of the world.
_BOOKKEEPING = frozenset({"checked", "examined"})
_PUT = re.compile(r"^put (?P<o>.+?) (?:in/on|in|on|into) (?:the )?(?P<r>.+)$")


def normalize(action: str) -> str:
    a = " ".join(action.strip().strip(".").lower().split())
    return a.removeprefix("> ").strip()


def subgoals(
    task_type: str, facts: list[tuple[str, tuple[str, ...]]], params: dict[str, str]
) -> list[bool]:
    """AgentBoard-style subgoals of an ALFWorld task, from engine facts (name, arg ids).

    pick_and_place: [target in hand or placed, target in a parent receptacle]; clean / heat /
    cool add "a target is clean/hot/cool" and require the placed one to be it; two-object:
    [one in hand or placed, one placed, two placed]; look-at: [target in hand, lamp on,
    both at once].
    """
    obj_t = params.get("object_target", "").lower() + "type"
    rec_t = params.get("parent_target", "").lower() + "type"
    types: dict[str, str] = {}
    for name, args in facts:
        if name in ("objecttype", "receptacletype") and len(args) == 2:
            types[args[0]] = args[1]
    targets = {o for o, t in types.items() if t == obj_t}
    held = {a[1] for n, a in facts if n == "holds" and len(a) == 2}
    placed = {
        a[0]
        for n, a in facts
        if n == "inreceptacle" and a[0] in targets and types.get(a[1]) == rec_t
    }
    holding = bool(held & targets)
    prop = {
        "pick_clean_then_place_in_recep": "isclean",
        "pick_heat_then_place_in_recep": "ishot",
        "pick_cool_then_place_in_recep": "iscool",
    }.get(task_type)
    if prop:
        treated = {a[0] for n, a in facts if n == prop and a[0] in targets}
        return [holding or bool(placed), bool(treated), bool(placed & treated)]
    if task_type == "pick_two_obj_and_place":
        return [holding or bool(placed), len(placed) >= 1, len(placed) >= 2]
    if task_type == "look_at_obj_in_light":
        lamp_t = params.get("toggle_target", "DeskLamp").lower() + "type"
        lamps = {o for o, t in types.items() if t == lamp_t}
        on = any(n == "istoggled" and a[0] in lamps for n, a in facts)
        return [holding, on, holding and on]
    return [holding or bool(placed), bool(placed)]


class AlfWorldEpisode(Episode):
    """An episode over one game folder (``task.payload["game_file"]``)."""

    def __init__(self, task: Task, seed: int = 0) -> None:
        self.task = task
        self.game_file = task.payload["game_file"]
        self.task_type = task.payload["task_type"]
        self.params = dict(task.payload.get("pddl_params", {}))
        # Generated games carry the seed their expert check won with: the expert replays it.
        self._seed = task.payload.get("expert_seed") or f"{seed}/{task.id}"
        self._rand = private_random_state(self._seed)
        self._env: Any = None
        self._state: Any = None
        self.progress = 0.0
        self.done = False
        self.closed = False

    # -- engine access -----------------------------------------------------------------------
    def _call(self, fn, *args):
        if self._env is None:
            raise RuntimeError(f"alfworld episode {self.task.id} is closed or was never reset")
        with seeded_global_random(self._rand) as box:
            try:
                out = fn(*args)
            except Exception as exc:
                raise RuntimeError(f"ALFWorld engine failed on {self.game_file}: {exc!r}") from exc
        self._rand = box[0]
        return out

    def _facts(self) -> list[tuple[str, tuple[str, ...]]]:
        return [
            (f.name.lower(), tuple(v.name.lower() for v in f.arguments))
            for f in self._state.get("_facts") or []
        ]

    def _world(self) -> frozenset:
        return frozenset(f for f in self._facts() if f[0] not in _BOOKKEEPING)

    def admissible_actions(self) -> list[str]:
        return list(self._state["admissible_commands"]) if self._state is not None else []

    def _progress(self) -> float:
        if self._state is not None and self._state.get("won"):
            return 1.0
        marks = subgoals(self.task_type, self._facts(), self.params)
        return sum(marks) / len(marks) if marks else 0.0

    def _observation(self, text: str, kind: str) -> Observation:
        info = {"domain": self.task.domain, "action_kind": kind, "task_type": self.task_type}
        return Observation(text, self.task.goal, self.admissible_actions(), info)

    # -- Episode protocol --------------------------------------------------------------------
    def reset(self) -> Observation:
        if self._env is None:
            self._env = start_game(self.game_file)
        self._rand = private_random_state(self._seed)
        self._state = self._call(self._env.reset)
        self.done = bool(self._state.get("won"))
        self.progress = self._progress()
        text = self._state["feedback"].replace(BANNER, "").strip()
        return self._observation(text, "reset")

    def resolve(self, action: str) -> str:
        """The engine command for ``action``: normalized; "put X in/on Y" maps to 0.4.2's
        "move X to Y" when that is admissible."""
        a = normalize(action)
        m = _PUT.match(a)
        if m:
            alt = f"move {m['o']} to {m['r']}"
            if alt in self.admissible_actions():
                return alt
        return a

    def step(self, action: str) -> StepResult:
        if self._env is None:
            raise RuntimeError(f"alfworld episode {self.task.id} is closed or was never reset")
        if self.done:
            obs = self._observation(DONE_MESSAGE, "done")
            return StepResult(obs, 0.0, True, True, self.progress, Feedback(False, False, "done"))
        command = self.resolve(action)
        if command.startswith("think:"):
            return StepResult(
                self._observation(THINK_REPLY, "think"),
                0.0,
                False,
                False,
                self.progress,
                Feedback(True, False),
            )
        admissible = command in self.admissible_actions()
        before = self._world()
        self._state, _, _ = self._call(self._env.step, command)
        text = self._state["feedback"].strip()
        if not admissible or text == NOTHING_HAPPENS:
            known = command.split(" ", 1)[0] in VERBS if command else False
            fb = Feedback(False, False, "precondition" if known else "invalid_action")
        else:
            fb = Feedback(True, self._world() != before)
        success = bool(self._state.get("won"))
        self.progress = max(self.progress, self._progress())
        self.done = success
        return StepResult(
            self._observation(text, "action" if fb.valid_action else "invalid"),
            1.0 if success else 0.0,
            success,
            success,
            self.progress,
            fb,
        )

    def expert_action(self) -> str | None:
        """The handcoded expert's next action (None when done, closed or it has none)."""
        if self.done or self._state is None:
            return None
        plan = self._state.get("extra.expert_plan") or []
        return plan[0] if plan else None

    def close(self) -> None:
        if self._env is not None:
            try:
                self._env.close()
            finally:
                self._env = None
        self.closed = True
