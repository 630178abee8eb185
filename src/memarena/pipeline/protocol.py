"""The protocol group (``conf/protocol/*.yaml``) as one typed object with every key named.

One knob per meaning:

- ``concurrency``: how many independent episodes are stepped in lockstep (one batched model
  call per step). It never changes results;
- ``update_every``: while a memory learns (acquisition of a method that reads its memory while
  acquiring; evaluation with ``freeze_during_eval: false``), how many tasks it sees per memory
  update. 1 = after every task (the papers' online / dynamic settings). Recorded in the run's
  config and in its episode records, so a resumed run replays exactly the original updates;
- ``count_retries`` / ``memory_across_runs``: how a learning evaluation with retries counts a
  task and whether its runs share one memory (:mod:`memarena.pipeline.learning`; ReMe's
  official dynamic setting sets both, memarena's stricter reading neither).

Every value is checked for its type and range when the config is checked, before any model or
env is built (``protocol.max_eval_tasks=abc`` ends the run at once with one message).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, fields
from typing import Any

from memarena.agent.autogen import AGENT_LOOPS
from memarena.agent.prompts import PROMPT_FORMATS, PROMPT_LAYOUTS, TOOL_CALLS, layout_conflict
from memarena.core import ConfigError
from memarena.core.settings import plain, reading

ACTION_MODES = ("choice", "free")
DOMAIN_MEMORIES = ("pooled", "per_domain")


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
    # per method name, a budget that replaces step_budget (MemCo's FEVER: its run_memco.sh passes
    # 12 to MemCo, its baseline scripts 30 to every other method); such a run is flagged
    # method_step_budget
    step_budget_by_method: dict | None = None
    prompt_format: str = "conversation"
    # the acting agent: memarena's loop (prompt_format), or the released AutoGen loop of
    # G-Memory (EvoGraph-Mem's tables) or of MemCo's fork (MemCo's tables)
    agent_loop: str = reading(
        "memarena", released="gmemory_autogen", memco_released="memco_autogen",
        memarena="memarena",
    )  # fmt: skip
    # the conversation's layout: memarena's (a system message with the env's instructions, the
    # memory before "Your task: User: ...") or ReMe's released BFCL agent's (no system message,
    # the raw first request, then a header and the experiences; the task's goal, and so every
    # memory's query, is the benchmark's own first request: agent/prompts.py)
    prompt_layout: str = reading("memarena", released="reme_bfcl", memarena="memarena")
    history_steps: int | None = 10
    tool_calls: str = "native"
    action_mode: str = "choice"
    temperature: float = 0.0
    max_tokens: int | None = None
    stop: list | None = None
    resume: bool = True
    snapshot_from: str | None = None
    retry_errors: bool = True
    # ReMe's dynamic setting: a retried task counts as its last trial, and the runs of a
    # repetition share one memory (its released agents); memarena's stricter reading: neither
    count_retries: bool = reading(False, released=True, memarena=False)
    memory_across_runs: bool = reading(False, released=True, memarena=False)
    max_failed_batches: int = 3
    max_error_rate: float | None = 0.1
    episode_timeout_s: float | None = None
    record_prompts: bool = False
    record_memory: bool = False
    domain_memories: str = "pooled"
    allow_code_change: bool = False

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            _check_type(f.name, getattr(self, f.name), hints[f.name])
        for key, low in _MINIMUM.items():
            value = getattr(self, key)
            if value is not None and value < low:
                raise ConfigError(
                    f"memarena: protocol.{key}={value!r} must be >= {low}"
                    f"{' or null' if key in _NULLABLE else ''}. Fix it on the command line or "
                    "in conf/protocol/; the run did not start."
                )
        if self.max_error_rate is not None and self.max_error_rate > 1:
            raise ConfigError(
                f"memarena: protocol.max_error_rate={self.max_error_rate!r} is a fraction of "
                "episodes: a number in [0, 1], or null for no limit (a run whose episodes all "
                "ended with an error still fails). Fix it on the command line or in "
                "conf/protocol/; the run did not start."
            )
        if self.max_eval_tasks == 0:
            raise ConfigError(
                "memarena: protocol.max_eval_tasks=0 would evaluate no task: the run would have "
                "nothing to score. Give a count >= 1, or null for the whole evaluation split. "
                "Fix it on the command line or in conf/protocol/; the run did not start."
            )
        if self.episode_timeout_s == 0:
            raise ConfigError(
                "memarena: protocol.episode_timeout_s=0 would end every episode at once: give "
                "seconds > 0, or null for no limit. Fix it on the command line or in "
                "conf/protocol/; the run did not start."
            )
        for key, valid in (
            ("action_mode", ACTION_MODES),
            ("prompt_format", PROMPT_FORMATS),
            ("prompt_layout", PROMPT_LAYOUTS),
            ("agent_loop", AGENT_LOOPS),
            ("tool_calls", TOOL_CALLS),
            ("domain_memories", DOMAIN_MEMORIES),
        ):
            if getattr(self, key) not in valid:
                raise ConfigError(
                    f"memarena: protocol.{key}={getattr(self, key)!r}; valid: {list(valid)}."
                )

        conflict = layout_conflict(self.prompt_layout, self.prompt_format, self.agent_loop)
        if conflict:
            raise ConfigError(f"memarena: {conflict}.")

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_config(cls, node: Any) -> ProtocolSettings:
        """From the composed ``protocol`` node (a mapping); unknown keys were already refused
        by the config check, and are refused here too."""
        values = {k: plain(v) for k, v in dict(node).items()}
        unknown = sorted(set(values) - set(cls.keys()))
        if unknown:
            raise ConfigError(
                f"memarena: protocol.{unknown[0]} is not a protocol key. Valid keys: "
                f"{', '.join(cls.keys())}."
            )
        return cls(**values)

    def budget_for(self, method: str) -> int | None:
        """The step budget of ``method``: its ``step_budget_by_method`` entry, else
        ``step_budget`` (None: the env's)."""
        return (self.step_budget_by_method or {}).get(method, self.step_budget)

    @property
    def runs_total(self) -> int:
        """Evaluation runs in all: ``repetitions`` x ``runs`` (run r is in repetition
        r // runs)."""
        return self.runs * self.repetitions


# the smallest value of each numeric key
_MINIMUM = {
    "concurrency": 1,
    "update_every": 1,
    "runs": 1,
    "repetitions": 1,
    "max_failed_batches": 1,
    "max_error_rate": 0.0,
    "episode_timeout_s": 0.0,
    "max_train_tasks": 0,
    "max_eval_tasks": 0,
    "step_budget": 1,
    "history_steps": 0,
    "max_tokens": 1,
    "temperature": 0.0,
}
_NULLABLE = {f.name for f in fields(ProtocolSettings) if f.default is None} | {"history_steps"}
_NAMES = {
    int: "an int",
    float: "a number",
    bool: "true or false",
    str: "a string",
    list: "a list of strings",
    dict: "a mapping of method names to step counts >= 1",
}


def _check_type(key: str, value: Any, hint: Any) -> None:
    """A ConfigError unless ``value`` fits the annotation ``hint`` (``X`` or ``X | None``)."""
    options = typing.get_args(hint) or (hint,)
    if value is None and type(None) in options:
        return
    kind = next(t for t in options if t is not type(None))
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if kind is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"memarena: protocol.{key}={value!r} is not a finite number: nan and inf are no "
            f"value of a setting (a nan passes no bound and is not equal to itself, so a rerun "
            f"could not match the run's records). Give a number"
            f"{' or null' if type(None) in options else ''}. Fix it on the command line or in "
            "conf/protocol/; the run did not start."
        )
    if kind is list and ok:
        ok = all(isinstance(v, str) and v for v in value)
    if kind is dict and ok:
        ok = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value.values())
    if not ok:
        null = " or null" if type(None) in options else ""
        raise ConfigError(
            f"memarena: protocol.{key}={value!r} must be {_NAMES[kind]}{null} (got "
            f"{type(value).__name__}). Fix it on the command line or in conf/protocol/; the run "
            "did not start."
        )
