"""Interfaces shared by MemCo's parts (local graph, induction, abstraction, retrieval).

- :class:`Transition`: one normalized step ``x_t -> a_t -> f_t -> x_{t+1}`` of an episode.
- :class:`RoleAdapter`: the benchmark-specific task-role mapping used by abstraction and by
  role binding at composition time (one per env, in :mod:`memarena.memory.memco.roles`).
- :class:`GlobalRecord`: a promoted abstract record in the global snapshot.
- :class:`Entry`: one retrieval candidate (a local record, a local-graph transition, or a
  global record) with its facet scores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from memarena.core.types import Task


@dataclass(frozen=True)
class Feedback:
    """Normalized feedback of one step (from the env's ``Feedback`` and progress)."""

    valid: bool
    state_changed: bool
    label: str | None  # failure label, None when the step did not fail
    progress_delta: float  # progress after minus progress before (>= 0 by construction)
    done: bool = False
    success: bool = False

    @property
    def progressed(self) -> bool:
        """Task progress or terminal success."""
        return self.progress_delta > 0 or self.success

    @property
    def stalled(self) -> bool:
        """No observable state or task progress (MemCo's no-progress marker)."""
        return not self.state_changed and not self.progressed


@dataclass(frozen=True)
class Transition:
    """``(x_t, a_t, f_t, x_{t+1})`` with normalized state cues and the concrete action."""

    t: int
    state: str  # normalized state cue of x_t
    action: str  # the executed action, normalized
    feedback: Feedback
    next_state: str  # normalized state cue of x_{t+1}
    observation: str = ""  # raw text of x_{t+1} (for reflections; not part of any key)


class RoleAdapter(Protocol):
    """Benchmark-specific task roles, kept next to the method (keyed by env name).

    Roles name the functional entities of a task (``object``, ``destination``, ``tool`` ...).
    Abstract actions write a role as ``<role>`` and any other entity by its kind without
    instance ids (``countertop`` for ``countertop 2``).
    """

    env: str

    def roles(self, task: Task) -> dict[str, str]:
        """Role -> concrete entity for this task (from the goal and task payload)."""
        ...

    def state_cue(self, observation: str) -> str:
        """A short normalized description of a state, used as graph-node content."""
        ...

    def abstract_action(self, action: str, roles: dict[str, str]) -> str | None:
        """The role-level form of a concrete action, or None when it has no transferable form."""
        ...

    def abstract_text(self, text: str, roles: dict[str, str]) -> str:
        """A condition or state cue with role entities replaced and instance ids removed."""
        ...

    def bind_action(
        self, abstract: str, roles: dict[str, str], admissible: list[str] | None
    ) -> str | None:
        """A concrete action for ``abstract`` under the current ``roles``: one of ``admissible``
        when the env lists actions (None when none matches), else the filled-in text."""
        ...


@dataclass
class GlobalRecord:
    """A promoted abstract record: the transferable relation plus aggregated evidence."""

    key: str
    type: str
    condition: str
    actions: tuple[str, ...]
    outcome: str
    n_pos: int
    n_neg: int
    n_stall: int
    score: float  # the promotion score (Wilson lower bound, or rho+ in the ablation)
    rho: float
    c_pos: int = 0
    c_neg: int = 0
    c_stall: int = 0
    sources: list[str] = field(default_factory=list)  # agents that contributed
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["actions"] = list(self.actions)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> GlobalRecord:
        return GlobalRecord(**{**d, "actions": tuple(d["actions"])})


@dataclass
class Entry:
    """One retrieval candidate and its scores (filled by retrieval)."""

    id: str
    source: str  # "local" or "global"
    kind: str  # record type, or "transition" for local-graph entries
    condition: str
    actions: tuple[str, ...]
    outcome: str
    text: str
    evidence: tuple[int, int, int] = (0, 0, 0)  # occurrence counters c+, c-, c0
    facets: dict[str, float] = field(default_factory=dict)  # r_x, r_p, r_g
    rank: float = 0.0
    bound_actions: tuple[str, ...] = ()  # concrete actions after role binding / matching
    extra: dict[str, Any] = field(default_factory=dict)
