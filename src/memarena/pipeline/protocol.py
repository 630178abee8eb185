"""The protocol group (``conf/protocol/*.yaml``) as one typed object with every key named.

One knob per meaning:

- ``concurrency``: how many independent episodes are stepped in lockstep (one batched model
  call per step). It never changes results;
- ``update_every``: while a memory learns (acquisition of a method that reads its memory while
  acquiring; evaluation with ``freeze_during_eval: false``), how many tasks it sees per memory
  update. 1 = after every task (the papers' online / dynamic settings). Recorded in the run's
  config and in its episode records, so a resumed run replays exactly the original updates.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from memarena.core import ConfigError

ACTION_MODES = ("choice", "free")


@dataclass(frozen=True)
class ProtocolSettings:
    train_split: str = "train"
    eval_split: str = "test"
    max_train_tasks: int | None = None
    max_eval_tasks: int | None = None
    concurrency: int = 8
    update_every: int = 8
    runs: int = 1
    repetitions: int = 1
    freeze_during_eval: bool = True
    step_budget: int | None = None
    history_steps: int = 10
    action_mode: str = "choice"
    temperature: float = 0.0
    max_tokens: int | None = None
    resume: bool = True
    snapshot_from: str | None = None

    def __post_init__(self) -> None:
        for key in ("concurrency", "update_every", "runs", "repetitions"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"memarena: protocol.{key}={value!r} must be an int >= 1.")
        for key in ("max_train_tasks", "max_eval_tasks"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(
                    f"memarena: protocol.{key}={value!r} must be an int >= 0 or null."
                )
        if self.action_mode not in ACTION_MODES:
            raise ConfigError(
                f"memarena: protocol.action_mode={self.action_mode!r}; valid: {list(ACTION_MODES)}."
            )

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_config(cls, node: Any) -> ProtocolSettings:
        """From the composed ``protocol`` node (a mapping); unknown keys were already refused
        by the config check, and are refused here too."""
        values = dict(node)
        unknown = sorted(set(values) - set(cls.keys()))
        if unknown:
            raise ConfigError(
                f"memarena: protocol.{unknown[0]} is not a protocol key. Valid keys: "
                f"{', '.join(cls.keys())}."
            )
        return cls(**values)

    @property
    def runs_total(self) -> int:
        """Evaluation runs in all: ``repetitions`` x ``runs`` (run r is in repetition
        r // runs)."""
        return self.runs * self.repetitions
