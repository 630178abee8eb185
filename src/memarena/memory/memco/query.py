"""MemCo's decision query ``q_t = Q(g, x_t, A_t, tau_<t)`` (paper Section 3.5).

The query holds what retrieval and composition compare memory against: the goal and its
functional roles, a normalized cue of the current observation, the admissible actions (None for
free-text envs), and the task phase inferred from the history (done actions, the last failed
action, a phase label).

A step of the history counts as

- *progressing* when its progress exceeds the progress before it;
- *done* when the action was valid and changed the state or progressed (failed or no-effect
  attempts are not done);
- *failed* when it was invalid, carries a failure label, or changed nothing and made no
  progress. The last failed action stays in the query only while no later step has changed
  the state or progressed (a repair that worked clears it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from memarena.core.types import MemoryQuery, Step
from memarena.memory.memco.base import RoleAdapter

_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """Lowercased, whitespace-collapsed text (the common form of actions and cues)."""
    return " ".join(text.lower().split())


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Lowercase alphanumeric tokens of ``text`` (cached: the same strings recur every step)."""
    return tuple(_TOKEN.findall(text.lower()))


@dataclass(frozen=True)
class DecisionQuery:
    """The per-step query of MemCo's retrieval and composition."""

    goal: str
    roles: dict[str, str]
    state: str  # adapter.state_cue of the current observation
    admissible: tuple[str, ...] | None  # normalized; None when the env lists no actions
    progress: float
    phase: str
    done: tuple[str, ...]  # done actions in order, normalized
    last_failed: str | None
    history_len: int
    last_action: str | None = None
    observation: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        """Plain text of the query (for the cosine and BM25 ablation scorers)."""
        return f"{self.goal} {self.state} {self.phase}"


def _failed(step: Step, progressed: bool) -> bool:
    fb = step.feedback
    return (
        (not fb.valid_action) or bool(fb.failure_label) or (not fb.state_changed and not progressed)
    )


def build_query(
    memory_query: MemoryQuery, adapter: RoleAdapter, roles: dict[str, str] | None = None
) -> DecisionQuery:
    """The decision query of ``memory_query``; ``roles`` default to ``adapter.roles(task)``."""
    task = memory_query.task
    obs = memory_query.observation
    if roles is None:
        roles = adapter.roles(task)
    done: list[str] = []
    last_failed: str | None = None
    last_progress_action: str | None = None
    n_progress = 0
    before = 0.0
    for step in memory_query.history:
        action = norm(step.action)
        progressed = step.progress > before
        before = max(before, step.progress)
        if _failed(step, progressed):
            last_failed = action
            continue
        done.append(action)
        last_failed = None
        if progressed:
            n_progress += 1
            last_progress_action = action
    history = memory_query.history
    last_action = norm(history[-1].action) if history else None
    if not history:
        phase = "start"
    elif last_failed is not None:
        phase = f"stalled after {last_failed}"
    elif last_progress_action is not None:
        phase = f"phase {n_progress}: after {last_progress_action}"
    else:
        phase = "phase 0: no progress yet"
    admissible = obs.admissible_actions
    return DecisionQuery(
        goal=task.goal,
        roles={k: norm(v) for k, v in roles.items() if v},
        state=adapter.state_cue(obs.text),
        admissible=None if admissible is None else tuple(norm(a) for a in admissible),
        progress=float(memory_query.progress),
        phase=phase,
        done=tuple(done),
        last_failed=last_failed,
        history_len=len(history),
        last_action=last_action,
        observation=obs.text,
    )
