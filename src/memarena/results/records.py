"""The episode record: one line of ``episodes.jsonl``, ``acquisition.jsonl`` and
``reflections.jsonl``. The pipeline writes it and every reader (metrics, collection, reports,
notebooks) reads it through this one type.

Fields (JSON keys):

- ``task_id``, ``split``, ``domain``: the task;
- ``run``: the evaluation run (acquisition: the sample index of the task); ``repetition``:
  ``run // protocol.runs`` (evaluation only); ``agent``: the evaluation view (MemCo's agent;
  None for one-view methods);
- ``success``, ``progress`` (in [0, 1]), ``steps``, ``status`` (one of
  :data:`~memarena.core.types.EPISODE_STATUSES`), ``error`` (the error text when ``error``);
- ``prompt_tokens``, ``completion_tokens``, ``tokens``: the agent's tokens in the episode;
- ``invalid_replies``: the agent's replies it could not act on (a constrained answer outside
  its choices, an empty reply, an action the env could not read), counted in choice and free
  mode alike; a request that got no answer ends the episode with status ``error`` instead;
- ``helper_turns``: steps whose action the stuck-solver helper chose (the released agent loop,
  ``protocol.agent_loop``; 0 otherwise);
- ``memory_ids``: the memory entries shown to the agent; ``wall_s``: seconds;
- ``memory_cost``: the episode's retrievals (``calls``, ``entries`` and ``words`` shown, and the
  memory's own LLM ``usage`` / ``fallbacks`` while answering them; absent when the memory was
  never asked); ``update_cost``: in an evaluation that learns, what the memory's update of the
  episode's chunk cost (on the last record of the chunk); see :mod:`memarena.core.costs`;
- ``update``: in an evaluation that learns, the index of the memory update the episode belongs
  to (its tasks were observed together, ``protocol.update_every`` of them); a resume replays
  the updates from these indices;
- ``attempt``, ``context``: a retry's attempt number and the lessons it was shown
  (``reflections.jsonl``);
- ``details``: the episode's ``details()`` (BFCL: the checker's verdict);
- ``trajectory``: the full trajectory (``Trajectory.to_dict``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from memarena.core.types import Outcome, Trajectory

# keys older runs wrote that the record no longer keeps (their values are in other fields)
_LEGACY_KEYS = frozenset({"outcome"})
REQUIRED = ("task_id", "success", "progress", "steps", "status")
OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))  # kept flat in the record


@dataclass
class EpisodeRecord:
    task_id: str
    split: str
    domain: str
    run: int
    success: bool
    progress: float
    steps: int
    status: str
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    invalid_replies: int = 0
    helper_turns: int = 0
    memory_ids: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    repetition: int | None = None
    agent: str | None = None
    update: int | None = None
    attempt: int | None = None
    context: dict[str, Any] | None = None
    memory_cost: dict[str, Any] | None = None
    update_cost: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    trajectory: dict[str, Any] | None = None

    @classmethod
    def of(
        cls,
        trajectory: Trajectory,
        outcome: Outcome,
        *,
        run: int,
        wall_s: float = 0.0,
        details: dict[str, Any] | None = None,
        memory_cost: dict[str, Any] | None = None,
        with_trajectory: bool = True,
        **extra: Any,
    ) -> EpisodeRecord:
        """The record of a finished episode (``extra``: repetition, agent, update, ...)."""
        task = trajectory.task
        return cls(
            task_id=task.id,
            split=task.split,
            domain=task.domain,
            run=run,
            **{name: getattr(outcome, name) for name in OUTCOME_FIELDS},
            tokens=outcome.tokens,
            memory_ids=list(trajectory.memory_ids),
            memory_cost=memory_cost,
            wall_s=round(wall_s, 4),
            details=details or None,
            trajectory=trajectory.to_dict() if with_trajectory else None,
            **extra,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """A record from one JSON line; a line that is not a JSON object, or a key this type
        does not know, is a ValueError."""
        if not isinstance(data, Mapping):
            raise ValueError(
                f"episode record is not a JSON object but {type(data).__name__} "
                f"{json.dumps(data)[:80]}"
            )
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known - _LEGACY_KEYS
        if unknown:
            raise ValueError(
                f"episode record has unknown keys {sorted(unknown)}; known: {sorted(known)}"
            )
        missing = [
            k for k in ("task_id", "success", "progress", "steps", "status") if k not in data
        ]
        if missing:
            raise ValueError(f"episode record lacks {missing}; got keys {sorted(data)}")
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("split", "")
        values.setdefault("domain", "")
        values.setdefault("run", 0)
        if values.get("tokens") is None:
            values["tokens"] = int(values.get("prompt_tokens") or 0) + int(
                values.get("completion_tokens") or 0
            )
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """The JSON line's object; optional fields that are None are left out."""
        out = asdict(self)
        optional = ("repetition", "update", "attempt", "context", "memory_cost", "update_cost")
        for key in (*optional, "details", "trajectory"):
            if out[key] is None:
                del out[key]
        if not out["helper_turns"]:  # only the released agent loop has them
            del out["helper_turns"]
        return out

    @property
    def key(self) -> tuple[str | None, int, str]:
        """(agent, run, task_id): what identifies an evaluated episode in a run (an acquisition
        sample: ``run`` is its sample index)."""
        return self.agent, self.run, self.task_id

    def outcome(self) -> Outcome:
        return Outcome(**{name: getattr(self, name) for name in OUTCOME_FIELDS})

    def pair(self) -> tuple[Trajectory, Outcome]:
        """(trajectory, outcome), as the memory observed them; needs the trajectory."""
        if self.trajectory is None:
            raise ValueError(f"the record of {self.task_id} has no trajectory")
        return Trajectory.from_dict(self.trajectory), self.outcome()


def latest(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per :attr:`EpisodeRecord.key`: the last one written (a retried error
    episode, or a redone episode of a part-written chunk, replaces the earlier copy), in
    first-written order."""
    out: dict[tuple, EpisodeRecord] = {}
    for rec in records:
        out[rec.key] = rec
    return list(out.values())


def as_records(items: list[EpisodeRecord | Mapping[str, Any]]) -> list[EpisodeRecord]:
    """Records from records or JSON objects (readers accept both)."""
    return [r if isinstance(r, EpisodeRecord) else EpisodeRecord.from_json(r) for r in items]
