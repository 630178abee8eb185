"""The episodes a G-Memory observed, kept so that they can be observed again.

Under MemCo's multi-domain protocol the global G-Memory is built by feeding every domain's
trained episodes, domain by domain, through G-Memory's ordinary write path once more (MemCo's
``eval_collab_multidomain_global.py`` calls ``add_memory`` on the messages each domain saved;
see ``GMemory.merge_domains``). A query node keeps only what retrieval shows, so a memory also
keeps each episode it stored, in the order it stored them, as one compact JSON row:

- the task without its ``payload`` (no G-Memory reader uses it);
- the initial observation and every observation cut to :data:`EPISODE_CHARS` characters (on one
  line): more than any G-Memory or EvoGraph-Mem reader takes (prompts 400 for the initial
  observation and 160 per step, stored nodes 300, the EvoGraph controller 160), and cutting is
  idempotent, so an episode read back gives the same nodes and the same LLM requests; a memory
  that shows observations whole (``observation_chars: null``, the released reading) keeps them
  whole;
- each step's action whole, its reward, progress and normalised feedback;
- the outcome.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memarena.core import Feedback, Outcome, Step, Task, Trajectory
from memarena.memory.llm_calls import clip_text

EPISODE_CHARS = 400


def encode(trajectory: Trajectory, outcome: Outcome, whole: bool = False) -> dict[str, Any]:
    """One episode as a JSON row (see the module docstring); ``whole``: observations kept as
    they came (a memory that shows them whole, ``observation_chars: null``)."""
    task = trajectory.task

    def kept(text: str) -> str:
        return text if whole else clip_text(text, EPISODE_CHARS)

    steps = [
        [
            s.action,
            kept(s.observation),
            s.reward,
            s.progress,
            s.feedback.valid_action,
            s.feedback.state_changed,
            s.feedback.failure_label,
        ]
        for s in trajectory.steps
    ]
    return {
        "task": {k: getattr(task, k) for k in ("id", "env", "split", "domain", "goal")},
        "initial": kept(trajectory.initial_observation),
        "steps": steps,
        "outcome": asdict(outcome),
    }


def decode(row: dict[str, Any]) -> tuple[Trajectory, Outcome]:
    """The episode of :func:`encode`'s row."""
    steps = [
        Step(action, observation, reward, progress, Feedback(valid, changed, label))
        for action, observation, reward, progress, valid, changed, label in row["steps"]
    ]
    trajectory = Trajectory(Task(**row["task"]), row["initial"], steps)
    return trajectory, Outcome(**row["outcome"])
