"""The agent's prompt, in one of two formats (``protocol.prompt_format``).

``conversation`` (the default): an append-only chat. A system message (the env's instructions),
a first user message with the stable parts (few-shot examples, the episode's memory, the task,
the initial observation unless it is the task's text again, the reply format), then per step
the agent's reply as an assistant message and what came back as a user message (or as tool
messages, one per call, when the replies are native tool calls). Per-step memory (a method
with ``granularity="step"``) and the valid actions (free-text mode) go into the newest user
message; a memory slot whose text is unchanged since a message the prompt still shows is not
repeated. Nothing already sent is ever rewritten, so a prompt is the previous prompt plus what
the step added: engines reuse the prefix's KV cache (hf keeps it; vLLM's prefix caching finds
it).

History cut: with ``history_steps = W`` (null: no cut), steps are dropped from the oldest in
blocks of ``max(1, W // 2)``, so between 1 + W - W // 2 and W steps are shown and the
prompt changes its middle only once per block. A user request that arrived with a dropped step
(a multi-turn task's next turn, ``Observation.user_turn``) is kept in place; the dropped steps
leave a one-line note.

``single``: one user message per step, rebuilt each time: the fixed parts, the memory, the
task, the last ``history_steps`` (action, observation) pairs as text and the current
observation (the prompt format of G-Memory's and MemCo's code).

Layout (``protocol.prompt_layout``, conversation format only): ``memarena`` is the above;
``reme_bfcl`` is the structure of ReMe's released BFCL agent (agentscope-ai/ReMe 26cb5ca6,
benchmark/bfcl/bfcl_agent.py): no system message (the functions travel as the request's tools
only), and the first user message is the benchmark's own first request (``Observation.info
["request"]``, the BFCL entry's text without memarena's ``User: `` label). When the episode's
memory shows anything, that message becomes the task, a header line and the memory's items
(each slot's ``MemoryContext.bare`` text: ReMe's ``Experience i :`` blocks; a retry's lessons
take the same place); with nothing to show it is the request alone. Later user turns are the
benchmark's own messages too; replies, tool messages and per-step memory are as above. No reply
format is stated: BFCL ends a turn at a reply without calls (the env's ``text_ends_turn``), as
the benchmark's multi-turn loop that ReMe's agent follows does, so the "NEXT" convention of
memarena's system message is not needed.

Both formats say where they put each memory slot (:class:`MemorySpan`: the message, the slot's
name, its character offsets in the message's content): :func:`build_single` and
:meth:`Conversation.prompt` return them with the messages, and the runner records them with the
step's prompt (``protocol.record_prompts``), so a reader finds the memory in a prompt without
knowing any method's text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from memarena.core import (
    EnvPrompt,
    MemoryContext,
    Message,
    Observation,
    Step,
    Task,
    assistant_message,
)

PROMPT_FORMATS = ("conversation", "single")
PROMPT_LAYOUTS = ("memarena", "reme_bfcl")  # protocol.prompt_layout (see the module docstring)
# reme_bfcl: the first user message with memory is TASK_LABEL, the request, a blank line,
# MEMORY_HEADER, then the memory (the order of bfcl_agent.py's get_query_with_memory; our words)

TASK_LABEL = "Task:"
MEMORY_HEADER = "Experience from similar tasks that may help you complete this one:"
TOOL_CALLS = ("native", "text")  # tool-calling envs: native tool calls, or the env's text format

# a part of a message: (the memory slot it shows, or None; its text)
_Part = tuple[str | None, str]
# a memory slot in one message's content: (slot, start, end)
_Spans = list[tuple[str, int, int]]


@dataclass(frozen=True)
class MemorySpan:
    """Where a memory slot's text sits in a prompt: ``messages[message]["content"][start:end]``
    is the text of the slot ``slot``."""

    message: int
    slot: str
    start: int
    end: int

    def to_json(self) -> dict[str, int | str]:
        return asdict(self)


def _join(parts: list[_Part]) -> tuple[str, _Spans]:
    """The parts joined by blank lines, and the offsets of those that show a memory slot."""
    spans: _Spans = []
    pos = 0
    for k, (slot, text) in enumerate(parts):
        pos += 2 if k else 0
        if slot is not None:
            spans.append((slot, pos, pos + len(text)))
        pos += len(text)
    return "\n\n".join(text for _, text in parts), spans


def build_messages(
    prompt: EnvPrompt,
    task: Task,
    observation: Observation,
    history: list[Step],
    memory: MemoryContext,
    *,
    initial_observation: str,
    history_steps: int | None,
    show_actions: bool,
    examples: int | str | None = None,
) -> list[Message]:
    """The ``single`` format's messages (:func:`build_single` without the memory spans)."""
    return build_single(
        prompt,
        task,
        observation,
        history,
        memory,
        initial_observation=initial_observation,
        history_steps=history_steps,
        show_actions=show_actions,
        examples=examples,
    )[0]


def build_single(
    prompt: EnvPrompt,
    task: Task,
    observation: Observation,
    history: list[Step],
    memory: MemoryContext,
    *,
    initial_observation: str,
    history_steps: int | None,
    show_actions: bool,
    examples: int | str | None = None,
) -> tuple[list[Message], list[MemorySpan]]:
    """The ``single`` format: one system message (env instructions) and one user message
    holding, in order: the env's fixed examples (``examples`` of them: None = the env's default
    count), the memory slots, the task, the recent history and the current observation (with
    the admissible actions when ``show_actions``); and where the memory slots are."""
    parts = _stable_parts(prompt, task, memory, initial_observation, examples)
    if history_steps is None:
        recent = list(history)
    else:
        recent = history[-history_steps:] if history_steps > 0 else []
    if recent:
        skipped = len(history) - len(recent)
        lines = [f"(earlier {skipped} steps omitted)"] if skipped else []
        for step in recent:
            lines.append(f"> {step.action}\n{step.observation}")
        parts.append((None, "History:\n" + "\n".join(lines)))
        parts.append((None, f"Current observation: {observation.text}"))
    if show_actions and observation.admissible_actions:
        parts.append((None, _valid_actions(observation)))
    parts.append((None, prompt.action_format))
    user, spans = _join(parts)
    messages: list[Message] = [
        {"role": "system", "content": prompt.system},
        {"role": "user", "content": user},
    ]
    return messages, [MemorySpan(1, slot, a, b) for slot, a, b in spans]


def _stable_parts(
    prompt: EnvPrompt,
    task: Task,
    memory: MemoryContext,
    initial_observation: str,
    examples: int | str | None,
) -> list[_Part]:
    parts: list[_Part] = []
    shown = prompt.examples(examples)
    if shown:
        parts.append((None, "\n\n".join(shown)))
    parts.extend((slot, text) for slot, text in memory.slots.items() if text)
    parts.append((None, f"Your task: {task.goal}"))
    if initial_observation.strip() != task.goal.strip():  # BFCL: both are the first request
        parts.append((None, f"Initial observation: {initial_observation}"))
    return parts


def _valid_actions(observation: Observation) -> str:
    return "Valid actions: " + "; ".join(observation.admissible_actions or [])


@dataclass
class _StepTurn:
    messages: list[Message]  # the assistant's reply, then what came back
    request: Message | None = None  # a user request that arrived with it (kept when cut)
    memory: _Spans = field(default_factory=list)  # the slots in its user message (the last)


@dataclass
class Conversation:
    """One episode's append-only chat (the ``conversation`` format; see the module docstring).

    ``native_tools``: the agent's replies are parsed into native tool calls (the request
    carries the env's ``tools``), and results of calls go back as tool messages."""

    head: list[Message]
    history_steps: int | None = None
    native_tools: bool = False
    turns: list[_StepTurn] = field(default_factory=list)
    # per memory slot: the text last shown and the step that showed it (-1: the first message)
    shown: dict[str, tuple[str, int]] = field(default_factory=dict)
    head_memory: _Spans = field(default_factory=list)  # the slots in the first user message
    layout: str = "memarena"  # protocol.prompt_layout

    @staticmethod
    def start(
        prompt: EnvPrompt,
        task: Task,
        observation: Observation,
        memory: MemoryContext,
        *,
        show_actions: bool,
        examples: int | str | None = None,
        history_steps: int | None = None,
        native_tools: bool = False,
        layout: str = "memarena",
    ) -> Conversation:
        if layout == "reme_bfcl":
            return _start_reme_bfcl(task, observation, memory, history_steps, native_tools)
        system = prompt.tools_system if native_tools else prompt.system
        action_format = prompt.tools_action_format if native_tools else prompt.action_format
        parts = _stable_parts(prompt, task, memory, observation.text, examples)
        if show_actions and observation.admissible_actions:
            parts.append((None, _valid_actions(observation)))
        parts.append((None, action_format or prompt.action_format))
        user, spans = _join(parts)
        head: list[Message] = [
            {"role": "system", "content": system or prompt.system},
            {"role": "user", "content": user},
        ]
        shown = {name: (text, -1) for name, text in memory.slots.items() if text}
        return Conversation(head, history_steps, native_tools, shown=shown, head_memory=spans)

    def add_step(
        self,
        reply: str,
        observation: Observation,
        memory: MemoryContext | None,
        *,
        show_actions: bool,
    ) -> None:
        """The agent's ``reply`` and the ``observation`` it led to; ``memory``: per-step slots
        shown with that observation (None: none)."""
        index = len(self.turns)
        if self.native_tools:
            said = assistant_message(reply, id_prefix=f"call_{index}")
        else:
            said = {"role": "assistant", "content": reply}
        extra: list[_Part] = list(self._new_memory(memory, index))
        if show_actions and observation.admissible_actions:
            extra.append((None, _valid_actions(observation)))
        calls = said.get("tool_calls") or []
        messages: list[Message] = [said]
        text = observation.text
        if self.layout == "reme_bfcl" and observation.user_turn:
            text = observation.info.get("request", text)  # the benchmark's own message
        if calls:
            messages.extend(_tool_messages(calls, observation))
            user, spans = _join(extra)
        else:
            user, spans = _join([(None, text), *extra])
        request = None
        if user:
            request = {"role": "user", "content": user}
            messages.append(request)
        kept = request if observation.user_turn else None
        self.turns.append(_StepTurn(messages, kept, spans if request else []))

    def messages(self) -> list[Message]:
        """What the agent is sent now: the head and the kept steps (see the cut rule)."""
        return self.prompt()[0]

    def prompt(self) -> tuple[list[Message], list[MemorySpan]]:
        """:meth:`messages` and where their memory slots are."""
        first = self.first_shown()
        head = [[] for _ in self.head]
        head[-1] = list(self.head_memory)  # the head's user message
        out = [(dict(m), spans) for m, spans in zip(self.head, head, strict=True)]
        dropped = self.turns[:first]
        if dropped:
            note = f"({first} earlier steps are not shown.)"
            out.append(({"role": "user", "content": note}, []))
            out.extend((dict(t.request), list(t.memory)) for t in dropped if t.request is not None)
            out = _merge_users(out)
        for turn in self.turns[first:]:
            last = len(turn.messages) - 1
            out.extend(
                (dict(m), list(turn.memory) if k == last else [])
                for k, m in enumerate(turn.messages)
            )
        spans = [MemorySpan(i, *span) for i, (_, s) in enumerate(out) for span in s]
        return [m for m, _ in out], spans

    def _new_memory(self, memory: MemoryContext | None, index: int) -> list[_Part]:
        """The slots to show with step ``index``: those whose text is not already in view
        (a slot unchanged since a message the prompt still holds is not repeated)."""
        first = self.first_shown(index + 1)
        out = []
        for name, text in (memory.slots.items() if memory else ()):
            last = self.shown.get(name)
            in_view = last is not None and (last[1] < 0 or last[1] >= first)
            if not text or (in_view and last[0] == text):
                continue
            out.append((name, text))
            self.shown[name] = (text, index)
        return out

    def first_shown(self, steps: int | None = None) -> int:
        """The first step the prompt shows when it holds ``steps`` steps (default: now)."""
        n = len(self.turns) if steps is None else steps
        w = self.history_steps
        if w is None or n <= w:
            return 0
        if w <= 0:
            return n
        block = max(1, w // 2)
        return -(-(n - w) // block) * block


def _start_reme_bfcl(
    task: Task,
    observation: Observation,
    memory: MemoryContext,
    history_steps: int | None,
    native_tools: bool,
) -> Conversation:
    """The ``reme_bfcl`` layout's head: one user message, the request alone or the task, the
    header and the memory's items (see the module docstring)."""
    request = str(observation.info.get("request", task.goal))
    shown = [(name, memory.bare.get(name, text)) for name, text in memory.slots.items() if text]
    if not shown:
        head: list[Message] = [{"role": "user", "content": request}]
        return Conversation(head, history_steps, native_tools, layout="reme_bfcl")
    content = f"{TASK_LABEL}\n{request}\n\n{MEMORY_HEADER}\n"
    spans: _Spans = []
    for k, (name, text) in enumerate(shown):
        if k:  # ReMe's blocks end with a newline; one more leaves a blank line between
            content += "\n" if content.endswith("\n") else "\n\n"
        spans.append((name, len(content), len(content) + len(text)))
        content += text
    head = [{"role": "user", "content": content}]
    seen = {name: (text, -1) for name, text in memory.slots.items() if text}
    return Conversation(
        head, history_steps, native_tools, shown=seen, head_memory=spans, layout="reme_bfcl"
    )


def _tool_messages(calls: list[dict], observation: Observation) -> list[Message]:
    """One tool message per call: the env's per-call results, or (when it ran nothing, e.g.
    an unknown function) its observation text for the first call."""
    results = list(observation.tool_results or [observation.text])
    if len(results) > len(calls):
        results[len(calls) - 1 :] = ["\n".join(results[len(calls) - 1 :])]
    out = []
    for k, call in enumerate(calls):
        content = results[k] if k < len(results) else "(no result)"
        out.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "content": content,
            }
        )
    return out


def _merge_users(messages: list[tuple[Message, _Spans]]) -> list[tuple[Message, _Spans]]:
    """Consecutive user messages joined into one (chat templates expect alternation), their
    memory spans moved with their text."""
    out: list[tuple[Message, _Spans]] = []
    for message, spans in messages:
        if out and message["role"] == "user" and out[-1][0]["role"] == "user":
            before, kept = out[-1]
            shift = len(before["content"]) + 2
            moved = [(slot, a + shift, b + shift) for slot, a, b in spans]
            content = before["content"] + "\n\n" + message["content"]
            out[-1] = ({"role": "user", "content": content}, kept + moved)
        else:
            out.append((message, spans))
    return out


def layout_conflict(layout: str, prompt_format: str, agent_loop: str) -> str | None:
    """Why ``protocol.prompt_layout`` cannot go with the format and loop given, or None: a
    layout other than memarena's lays out the conversation of memarena's own agent loop."""
    if layout == "memarena" or (prompt_format == "conversation" and agent_loop == "memarena"):
        return None
    return (
        f"protocol.prompt_layout={layout} lays out the conversation of memarena's agent loop: "
        "it needs protocol.prompt_format=conversation and protocol.agent_loop=memarena (got "
        f"{prompt_format} / {agent_loop})"
    )
