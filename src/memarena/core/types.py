"""Plain data types shared by every part of memarena.

Everything here is JSON-serialisable through :func:`dataclasses.asdict`, so episodes,
trajectories and usage counters can be appended to ``*.jsonl`` files as they finish and read
back on resume.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One benchmark task.

    ``payload`` holds whatever the env needs to rebuild the task (a PDDL problem text, a game
    file path, a claim id); it must stay JSON-serialisable.
    """

    id: str
    env: str
    split: str
    domain: str
    goal: str
    payload: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Observation:
    """What the agent sees after ``reset`` or ``step``."""

    text: str
    goal: str
    admissible_actions: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    # for the conversation prompt format (see memarena.agent.prompts): the results of the
    # function calls the last action made, one per call in order (they go back as tool
    # messages when the calls were native tool calls), and whether this observation brings a
    # new user request (multi-turn tasks: a user message never cut from the history)
    tool_results: list[str] | None = None
    user_turn: bool = False


@dataclass
class Feedback:
    """Normalised feedback every env provides (MemCo's evidence assignment, paper B.2.5).

    ``failure_label`` is a short machine-readable reason when the step failed
    (``"invalid_action"``, ``"precondition"``, ``"no_effect"``, ``"parse_error"``, ...).
    """

    valid_action: bool
    state_changed: bool
    failure_label: str | None = None


@dataclass
class StepResult:
    observation: Observation
    reward: float
    done: bool
    success: bool
    progress: float
    feedback: Feedback


@dataclass
class Step:
    """One agent step as recorded in a trajectory."""

    action: str
    observation: str
    reward: float
    progress: float
    feedback: Feedback
    raw_output: str = ""
    admissible_actions: list[str] | None = None
    # with ``protocol.record_prompts``: the chat messages the agent was given for this step and
    # the ids of the memory entries they showed (None otherwise, and then left out of the record);
    # with ``protocol.record_memory``: the ids and the memory text itself (slot -> text), without
    # the rest of the prompt; with ``protocol.record_prompts``, ``memory_spans``: where each
    # memory slot's text sits in ``prompt`` (``{"message", "slot", "start", "end"}``: the
    # message's index and the character offsets of the slot in its content, as the prompt
    # builder placed it; see memarena.agent.prompts)
    prompt: list[dict[str, Any]] | None = None
    memory_ids: list[str] | None = None
    memory: dict[str, str] | None = None
    memory_spans: list[dict[str, Any]] | None = None
    memory_entries: dict[str, str] | None = None  # MemoryContext.entries, with record_memory
    # who chose the step in the released agent loop (protocol.agent_loop): "helper" (the
    # stuck-solver helper's action, executed as the solver's) or "meta_check" (MemCo's think:
    # line, never sent to the env); None: the agent itself
    agent: str | None = None


@dataclass
class Trajectory:
    task: Task
    initial_observation: str
    steps: list[Step] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for step in out["steps"]:
            optional = ("prompt", "memory_ids", "memory", "memory_spans", "memory_entries", "agent")
            for key in optional:
                if step.get(key) is None:
                    step.pop(key, None)
        return out

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Trajectory:
        steps = [Step(**{**s, "feedback": Feedback(**s["feedback"])}) for s in d["steps"]]
        return Trajectory(
            task=Task(**d["task"]),
            initial_observation=d["initial_observation"],
            steps=steps,
            memory_ids=list(d.get("memory_ids", [])),
        )


# Episode statuses: "success" and "failure" are ordinary endings; "error" means the env or the
# agent raised (the error text is kept); "budget" means the step budget ran out; "timeout" that
# the episode ran past protocol.episode_timeout_s (a failure, not retried); "prompt_too_long"
# that the agent's prompt did not fit the model's context (a failure, not retried; see
# memarena.llm.context_fit).
EPISODE_STATUSES = ("success", "failure", "budget", "error", "timeout", "prompt_too_long")


@dataclass
class Outcome:
    success: bool
    progress: float
    steps: int
    status: str
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # replies the agent could not act on: a constrained answer outside its choices, an empty
    # reply, or an action the env could not read (feedback ``invalid_action`` / ``parse_error``)
    invalid_replies: int = 0
    # steps the stuck-solver helper chose (protocol.agent_loop gmemory_autogen / memco_autogen)
    helper_turns: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class MemoryQuery:
    """What a memory method is asked at retrieval time (per task or per step)."""

    task: Task
    observation: Observation
    step: int = 0
    history: list[Step] = field(default_factory=list)
    progress: float = 0.0


@dataclass
class MemoryContext:
    """Rendered prompt slots plus the ids of the memory items that produced them.

    ``entries`` (optional): per shown id, the line it renders as in the slots (MemCo: the
    summary field and item, e.g. ``"Failure memory: avoid 'x' when 'y'"``), so a reader sees
    what each id showed; methods whose ids name stored entries leave it empty (the snapshot
    holds their text).

    ``bare`` (optional): per slot, its items without the method's own header line, in the
    layout of the released agent of the method's paper (ReMe: ``Experience i :`` blocks). A
    prompt layout that writes its own header above the memory (``protocol.prompt_layout:
    reme_bfcl``) shows these; a slot without one is shown as its ``slots`` text."""

    slots: dict[str, str] = field(default_factory=dict)
    memory_ids: list[str] = field(default_factory=list)
    entries: dict[str, str] = field(default_factory=dict)
    bare: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def empty() -> MemoryContext:
        return MemoryContext()


@dataclass
class Usage:
    """Token and call accounting for one backbone (written to ``usage.json``)."""

    calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    # engines that reuse prompt KV caches (hf): prompt tokens they were given for cache misses,
    # and how many of those came from a stored prefix instead of being computed
    engine_prompt_tokens: int = 0
    reused_prompt_tokens: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)

    def count_fallback(self, kind: str) -> None:
        self.fallbacks[kind] = self.fallbacks.get(kind, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
