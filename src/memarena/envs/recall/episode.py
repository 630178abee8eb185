"""One recall episode: enter the device's code, one action per stage.

The right action moves the device to its next stage; any other admissible action is wrong and
ends the episode (failure); text that is not an admissible action changes nothing
(``invalid_action``) and costs a step. Training tasks show a note with the code at every
stage; test tasks never do.
"""

from __future__ import annotations

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.recall.generator import number

NOT_AN_ACTION = "Nothing happens: that is not one of the actions you can take here."


def _norm(action: str) -> str:
    return " ".join(str(action).lower().split()).strip(" .'\"")


class RecallEpisode(Episode):
    """The task's payload holds everything: ``device``, ``code``, ``options`` (the admissible
    actions per stage), ``place`` and ``note`` (whether the code is shown)."""

    def __init__(self, task: Task) -> None:
        self.task = task
        p = task.payload
        self.device: str = p["device"]
        self.code: list[str] = list(p["code"])
        self.options: list[list[str]] = [list(o) for o in p["options"]]
        self.note: bool = bool(p["note"])
        self.place: str = p["place"]
        self.stage = 0
        self.done = False

    def _stage_text(self, after: str = "") -> str:
        """The stage sentence first (MemCo's state cue), then ``after``, then the note."""
        stage, n = number(self.stage + 1), number(len(self.code))
        text = f"The {self.device[4:]} is at stage {stage} of {n}."
        text += f" {after}" if after else ""
        if self.note:
            text += f' The note reads: stage {stage} is "{self.code[self.stage]}".'
        return text

    def _the_device(self) -> str:
        return self.device[0].upper() + self.device[1:]

    def _obs(self, text: str) -> Observation:
        admissible = None if self.done else list(self.options[self.stage])
        info = {"domain": self.task.domain, "stage": self.stage, "stages": len(self.code)}
        return Observation(text, self.task.goal, admissible, info)

    def reset(self) -> Observation:
        self.stage, self.done = 0, False
        where = f"You are in the {self.place}, in front of {self.device}."
        length = f"It opens with a code of {number(len(self.code))} steps, one action per step."
        note = (
            "A note pinned beside it gives the code."
            if self.note
            else "There is no note: nothing here tells you the code."
        )
        return self._obs(self._stage_text(f"{where} {length} {note}"))

    def step(self, action: str) -> StepResult:
        n = len(self.code)
        if self.done:
            fb = Feedback(False, False, "done")
            obs = self._obs("The episode is over.")
            return StepResult(obs, 0.0, True, False, self.stage / n, fb)
        norm = _norm(action)
        admissible = {_norm(a): a for a in self.options[self.stage]}
        if norm not in admissible:
            fb = Feedback(False, False, "invalid_action")
            return StepResult(self._obs(NOT_AN_ACTION), 0.0, False, False, self.stage / n, fb)
        chosen = admissible[norm]
        if chosen != self.code[self.stage]:
            self.done = True
            text = (
                f'Wrong: "{chosen}" is not stage {number(self.stage + 1)} of the code. '
                f"{self._the_device()} locks for good."
            )
            fb = Feedback(True, False, "wrong_step")
            return StepResult(self._obs(text), 0.0, True, False, self.stage / n, fb)
        self.stage += 1
        if self.stage == n:
            self.done = True
            text = f'Right: "{chosen}". {self._the_device()} opens.'
            return StepResult(self._obs(text), 1.0, True, True, 1.0, Feedback(True, True))
        text = self._stage_text(f'"{chosen}" was right.')
        return StepResult(self._obs(text), 0.0, False, False, self.stage / n, Feedback(True, True))

    def expert_action(self) -> str | None:
        return None if self.done else self.code[self.stage]
