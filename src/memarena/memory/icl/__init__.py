"""ICL: few-shot demonstrations from expert trajectories of train tasks.

Acquisition runs the env's expert (``acquisition_policy = "expert"``) on the train tasks; every
successful trajectory becomes a demonstration. Retrieval (once per task) picks ``n_shots``
demonstrations, same-domain ones first, in acquisition order, which keeps the choice
deterministic and free of any model call.
"""

from __future__ import annotations

from typing import Any

from memarena.core import MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory


def render_demonstration(traj: Trajectory, max_steps: int) -> str:
    lines = [f"Task: {traj.task.goal}", f"Observation: {traj.initial_observation}"]
    for step in traj.steps[:max_steps]:
        lines.append(f"> {step.action}")
        lines.append(step.observation)
    return "\n".join(lines)


class ICLMemory(MemoryMethod):
    name = "icl"
    acquisition_policy = "expert"
    retrieves_during_acquisition = False  # the expert acts; demonstrations are not shown to it

    def __init__(
        self,
        n_shots: int = 2,
        max_steps_per_demo: int = 30,
        same_domain_first: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.n_shots = n_shots
        self.max_steps_per_demo = max_steps_per_demo
        self.same_domain_first = same_domain_first
        self.demos: list[dict[str, str]] = []  # {"id", "domain", "text"}

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        if not outcome.success:
            return
        self.demos.append(
            {
                "id": f"demo:{trajectory.task.id}",
                "domain": trajectory.task.domain,
                "text": render_demonstration(trajectory, self.max_steps_per_demo),
            }
        )

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        if self.n_shots <= 0 or not self.demos:
            return MemoryContext.empty()
        pool = self.demos
        if self.same_domain_first:
            same = [d for d in pool if d["domain"] == query.task.domain]
            pool = same + [d for d in pool if d["domain"] != query.task.domain]
        chosen = pool[: self.n_shots]
        body = "\n\n".join(f"Example {i + 1}:\n{d['text']}" for i, d in enumerate(chosen))
        text = "Here are solved examples of similar tasks:\n\n" + body
        return MemoryContext(slots={"demonstrations": text}, memory_ids=[d["id"] for d in chosen])

    def state_dict(self) -> dict[str, Any]:
        return {"demos": self.demos}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.demos = list(state["demos"])
