"""One AppWorld task played as ReMe's ReAct code agent plays it, on a pooled server.

- Reset: ``/initialize`` on a free server of the pool; the goal is the instruction (as in
  ``Task.goal``; the supervisor is in the env's system prompt, as in ReMe's agent) and the
  observation says that the REPL is ready (:data:`~memarena.envs.appworld.prompts.START`).
- Action: a Python program. :meth:`AppWorldEpisode.parse_reply` takes the first complete
  ```` ```python ```` block of a reply, else an unterminated one at its end, else the whole
  reply (ReMe's ``extract_code_and_fix_content``).
- Step: ``/execute`` the code; the observation is ``Output:`` and the output in a fence. Then
  ``/task_completed``: once the agent has called ``apis.supervisor.complete_task`` (or at the
  env's step budget, AppWorld's ``max_interactions``), ``/evaluate`` scores the final state.
- Success: every evaluation test passes (Task Goal Completion); progress: passed / all tests
  (ReMe's reward). Details keep the scenario, the test counts and the failed requirements.
- Feedback: an empty reply is an invalid action (nothing runs); a program AppWorld reports as
  ``Execution failed`` gives ``syntax_error`` (AppWorld's ``Syntax error in line``; also an
  invalid action) or ``execution_error`` (an exception, an unknown API, a disallowed call).
  ``state_changed`` is approximated as "the program ran without an error" (the server does not
  report database changes per step).
- Expert: the task's ground-truth program (``compiled_solution.py`` / ``solution.py``) followed
  by ``solution(apis, requester)``, as ``appworld verify tasks`` runs it; None where the data has
  no solution (test splits).

A server that dies mid-episode makes the request raise: the episode ends with status ``error``
and the pool restarts that server for the next episode.
"""

from __future__ import annotations

import re
from typing import Any

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.appworld.data import scenario_of
from memarena.envs.appworld.prompts import START, output_text
from memarena.envs.appworld.server import AppWorldServer, ServerPool

_FULL_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
_PARTIAL_BLOCK = re.compile(r".*```python\n(.*)", re.DOTALL)
FAILED_PREFIX = "Execution failed"
SYNTAX_MARKERS = ("Syntax error in line", "SyntaxError", "IndentationError")
NOISE = [
    "print(apis.api_docs.show_app_descriptions())",
    "print(apis.api_docs.show_api_descriptions(app_name='supervisor'))",
    "print(apis.supervisor.show_profile())",
]


def extract_code(text: str) -> str:
    """The code a reply asks to run (see the module docstring)."""
    full = _FULL_BLOCK.search(text)
    if full:
        return full.group(1).strip()
    partial = _PARTIAL_BLOCK.match(text)
    if partial and partial.group(1).strip():
        return partial.group(1).strip()
    return text.strip()


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


class AppWorldEpisode(Episode):
    def __init__(
        self,
        task: Task,
        pool: ServerPool,
        *,
        step_budget: int,
        experiment_name: str,
        max_interactions: int,
        expert_code: str | None = None,
    ) -> None:
        self.task = task
        self.pool = pool
        self.step_budget = step_budget
        self.experiment_name = experiment_name
        self.max_interactions = max_interactions
        self.expert_code = expert_code
        self.task_id = str(task.payload["task_id"])
        self.server: AppWorldServer | None = None
        self.steps = 0
        self.goal = task.goal
        self.evaluation: dict[str, Any] | None = None
        self.success = False
        self._expert_ran = False

    # -- protocol ----------------------------------------------------------------------------
    def reset(self) -> Observation:
        if self.server is None:
            self.server = self.pool.acquire()
        info = self.server.client.initialize(
            self.task_id,
            experiment_name=f"{self.experiment_name}_s{self.server.index}",
            max_interactions=self.max_interactions,
        )
        self.goal = info.get("instruction") or self.task.goal
        return Observation(
            text=START,
            goal=self.goal,
            info={"task_id": self.task_id, "datetime": info.get("datetime")},
        )

    def step(self, action: str) -> StepResult:
        client = self._client()
        self.steps += 1
        code = action.strip()
        if not code:
            return self._result(output_text("No code to run: reply with one ```python block."),
                                Feedback(False, False, "no_code"))  # fmt: skip
        output = client.execute(self.task_id, code)
        if self.expert_code is not None and code == self._expert_program():
            self._expert_ran = True
        failed = output.lstrip().startswith(FAILED_PREFIX)
        syntax = failed and any(m in output for m in SYNTAX_MARKERS)
        label = "syntax_error" if syntax else "execution_error" if failed else None
        feedback = Feedback(valid_action=not syntax, state_changed=not failed, failure_label=label)
        if client.task_completed(self.task_id) or self.steps >= self.step_budget:
            self._evaluate()
        return self._result(output_text(output), feedback)

    def _result(self, text: str, feedback: Feedback) -> StepResult:
        done = self.evaluation is not None
        info = {"evaluation": self._summary()} if done else {}
        return StepResult(
            observation=Observation(text=text, goal=self.goal, info=info),
            reward=1.0 if self.success else 0.0,
            done=done,
            success=self.success,
            progress=self.progress,
            feedback=feedback,
        )

    def _client(self):
        if self.server is None:
            raise RuntimeError("AppWorldEpisode.step before reset")
        return self.server.client

    def _evaluate(self) -> None:
        self.evaluation = self._client().evaluate(self.task_id)
        self.success = bool(self.evaluation.get("success"))

    @property
    def progress(self) -> float:
        if not self.evaluation:
            return 0.0
        passes = len(self.evaluation.get("passes") or [])
        total = passes + len(self.evaluation.get("failures") or [])
        return passes / total if total else float(self.success)

    def _summary(self) -> dict[str, Any]:
        ev = self.evaluation or {}
        return {
            "success": bool(ev.get("success")),
            "difficulty": ev.get("difficulty"),
            "num_tests": ev.get("num_tests"),
            "passes": len(ev.get("passes") or []),
            "failed_requirements": [f.get("requirement") for f in ev.get("failures") or []],
        }

    # -- hooks -------------------------------------------------------------------------------
    def parse_reply(self, text: str) -> str:
        return extract_code(text)

    def _expert_program(self) -> str:
        return f"{self.expert_code}\n\nsolution(apis, requester)"

    def expert_action(self) -> str | None:
        if self.expert_code is None or self._expert_ran:
            return None
        return fenced(self._expert_program())

    def noise_actions(self) -> list[str]:
        return [fenced(code) for code in NOISE]

    def details(self) -> dict | None:
        if self.server is not None and self.evaluation is None:
            try:  # ended by the runner (protocol budget): score the final state all the same
                self._evaluate()
            except Exception:  # the runner logs a failing hook; keep what we know
                return {"scenario": scenario_of(self.task_id), "evaluation": None}
        return {"scenario": scenario_of(self.task_id), "steps": self.steps,
                "evaluation": self._summary() if self.evaluation else None}  # fmt: skip

    def close(self) -> None:
        server, self.server = self.server, None
        if server is None:
            return
        try:
            if server.running():
                server.client.close(self.task_id)
        except Exception:  # the world is dropped when the next episode initializes anyway
            pass
        finally:
            self.pool.release(server)
