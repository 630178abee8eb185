"""LangChain's chat-model interface over a memarena backbone, for LangMem's memory manager.

LangMem (through trustcall) drives a LangChain ``BaseChatModel``: it binds tools (the memory
schema, trustcall's ``PatchDoc`` / ``RemoveDoc`` / ``PatchFunctionErrors``) and reads the
``tool_calls`` of the ``AIMessage`` it gets back. memarena's backbones answer text, with
JSON-schema constrained decoding. :class:`BackboneChatModel` joins the two:

- messages (:func:`to_chat_messages`): system messages first, merged; human -> user; an AI
  message's tool calls written in the reply format below; a tool result as a user turn. The
  system message ends with the bound tools (name, description, JSON schema of the arguments)
  and the reply format (:func:`tools_section`).
- tool calls (:func:`reply_schema`): the candidates are the tool ``tool_choice`` names, else
  every bound tool. One candidate and ``max_calls`` 1: the reply is that tool's arguments.
  Otherwise ``{"calls": [{"tool": <name>, "args": {...}}, ...]}`` with 1 to ``max_calls``
  items, each item's ``args`` constrained by its tool's schema. The constraint bounds every
  string (``field_chars``) and list (``max_items``) and closes every object (a free-form map,
  an object without properties, decodes as ``{}``: its keys could not be bounded), so every
  answer has a finite length and the request's ``max_tokens`` is that length
  (:func:`memarena.core.json_budget.reply_tokens`, or the method's cap per purpose when
  smaller); the call LangMem receives is validated against the tool's own schema as always.
  A request with no tool to call is free text, given ``field_chars`` tokens (the length of one
  field: LangMem only reads tool calls, so such a reply is never stored).
- accounting: each backbone call's tokens are counted per purpose (``extract``: no stored
  memory shown; ``update``: stored memories shown, PatchDoc bound; ``repair``: trustcall's
  validation-error patch) into the method's ``token_usage``. An unusable answer (the
  backbone's fallback, JSON that does not parse, a call to a tool that is not bound) is a
  counted fallback and the reply is an AIMessage without tool calls: LangMem then writes
  nothing for that conversation. Raising instead would send trustcall's update node into
  retries that only LangGraph's recursion limit stops.
- batching (:class:`LockstepBatcher`): the manager runs once per trajectory of a wave, as
  concurrent asyncio tasks; each model request waits until every running task has one
  waiting (or has finished), and they go to the backbone as one batched ``generate``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from memarena.core import Backbone, ChatRequest, Completion
from memarena.core.json_budget import reply_tokens
from memarena.memory.llm_calls import add_usage, record_fallback

FALLBACK = "langmem_tool_call"  # the fallback kind of an unusable tool-call answer
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "$defs", "definitions"})
_SCALAR_TYPES = ("string", "integer", "number", "boolean", "null")


# -- schemas ----------------------------------------------------------------------------------
def plain_schema(schema: dict[str, Any], *, keep_descriptions: bool = True) -> dict[str, Any]:
    """``schema`` with ``$ref`` inlined from its ``$defs`` and without titles / examples /
    defaults (and descriptions unless ``keep_descriptions``)."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    dropped = _ANNOTATIONS - ({"description"} if keep_descriptions else set())

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(n, depth) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**target, **rest}, depth + 1) if target and depth < 16 else rest
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in dropped:
                continue
            if key == "properties" and isinstance(value, dict):  # names are not keywords
                out[key] = {name: walk(sub, depth) for name, sub in value.items()}
            else:
                out[key] = walk(value, depth)
        return out

    return walk(schema, 0)


def bounded(schema: dict[str, Any], field_chars: int, max_items: int) -> dict[str, Any]:
    """The decoding constraint of an arguments schema: annotations dropped, every free string
    at most ``field_chars`` characters, every list at most ``max_items`` items, every object
    with properties closed and every free-form map (an object without properties) empty. A
    value of any JSON type (an ``anyOf`` of scalars and containers: trustcall's patch value)
    is decoded as a scalar: it replaces one field of a memory, and the fields of LangMem's
    Episode are strings; lists of lists of strings would make a reply of tens of thousands
    of tokens the only finite bound."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {
            k: ({n: walk(s) for n, s in v.items()} if k == "properties" else walk(v))
            for k, v in node.items()
        }
        free = "enum" not in out and "const" not in out
        if out.get("type") == "string" and free and "maxLength" not in out:
            out["maxLength"] = field_chars
        if out.get("type") == "array" and "maxItems" not in out:
            out["maxItems"] = max_items
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        if out.get("type") == "object" and "properties" not in out:  # a map: keys unbounded
            out = {**out, "properties": {}, "additionalProperties": False}
        scalars = [b for b in out.get("anyOf", []) if b.get("type") in _SCALAR_TYPES]
        if scalars and len(scalars) < len(out["anyOf"]):
            out["anyOf"] = scalars
        return out

    return walk(plain_schema(schema, keep_descriptions=False))


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]

    @staticmethod
    def of(tool: Any) -> Tool:
        """A LangChain / OpenAI tool (a pydantic class, a dict, a BaseTool) as name, description
        and its arguments' JSON schema."""
        spec = convert_to_openai_tool(tool)["function"]
        params = dict(spec.get("parameters") or {"type": "object", "properties": {}})
        params.pop("description", None)  # the tool's own description, given once beside it
        description = " ".join(str(spec.get("description") or "").split())
        return Tool(spec["name"], description, plain_schema(params))


def chosen_tools(tools: Sequence[Tool], tool_choice: Any) -> list[Tool]:
    """The tools a reply may call: the one ``tool_choice`` names, else all of them
    (``"any"``, ``"required"``, ``"auto"``, None); none for ``"none"``."""
    if tool_choice == "none" or not tools:
        return []
    name = tool_choice
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
    named = [t for t in tools if t.name == name]
    return named or list(tools)


def single_form(candidates: Sequence[Tool], max_calls: int) -> bool:
    """True when a reply is the arguments of the only candidate (no ``calls`` list)."""
    return len(candidates) == 1 and max_calls == 1


def reply_schema(
    candidates: Sequence[Tool], max_calls: int, field_chars: int, max_items: int
) -> dict[str, Any]:
    """The JSON schema the backbone's reply is constrained by (see the module docstring)."""
    if single_form(candidates, max_calls):
        return bounded(candidates[0].parameters, field_chars, max_items)
    items = [
        {
            "type": "object",
            "properties": {
                "tool": {"enum": [t.name]},
                "args": bounded(t.parameters, field_chars, max_items),
            },
            "required": ["tool", "args"],
            "additionalProperties": False,
        }
        for t in candidates
    ]
    calls = {
        "type": "array",
        "items": items[0] if len(items) == 1 else {"anyOf": items},
        "minItems": 1,
        "maxItems": max_calls,
    }
    return {
        "type": "object",
        "properties": {"calls": calls},
        "required": ["calls"],
        "additionalProperties": False,
    }


def tools_section(candidates: Sequence[Tool], max_calls: int) -> str:
    """The system-message section that lists the tools and the reply format."""
    lines = ["Tools you can call:"]
    for tool in candidates:
        lines.append(f"- {tool.name}: {tool.description.strip()}")
        lines.append(f"  arguments (JSON schema): {json.dumps(tool.parameters)}")
    if single_form(candidates, max_calls):
        lines.append(
            f"Call {candidates[0].name}: reply with its arguments as one JSON object and "
            "nothing else."
        )
    else:
        lines.append(
            'Reply with one JSON object and nothing else: {"calls": [{"tool": <tool name>, '
            f'"args": {{<its arguments>}}}}, ...]}}, with 1 to {max_calls} calls.'
        )
    return "\n".join(lines)


# -- messages ---------------------------------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "\n".join(parts)


def written_calls(tool_calls: Sequence[dict[str, Any]]) -> str:
    """An AI message's tool calls as the model writes them in the ``calls`` form (with ids,
    which trustcall's repair prompts refer to)."""
    calls = [{"id": c.get("id"), "tool": c["name"], "args": c.get("args", {})} for c in tool_calls]
    return json.dumps({"calls": calls}, ensure_ascii=False)


def to_chat_messages(messages: Sequence[BaseMessage], extra_system: str = "") -> list[dict]:
    """LangChain messages as memarena chat messages (see the module docstring)."""
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    for message in messages:
        text = _text(message.content)
        kind = message.type
        if kind == "system":
            system.append(text)
            continue
        if kind == "ai":
            calls = getattr(message, "tool_calls", None) or []
            text = "\n".join(t for t in (text, written_calls(calls) if calls else "") if t)
            role = "assistant"
        elif kind == "tool":
            name = getattr(message, "name", None) or "tool"
            text = f"Result of {name} call {getattr(message, 'tool_call_id', '')}: {text}"
            role = "user"
        else:
            role = "user"
        if turns and turns[-1][0] == role:  # chat templates want alternating turns
            turns[-1] = (role, turns[-1][1] + "\n\n" + text)
        else:
            turns.append((role, text))
    if extra_system:
        system.append(extra_system)
    out = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    return out + [{"role": role, "content": text} for role, text in turns]


# -- the bridge to the backbone ---------------------------------------------------------------
@dataclass
class PreparedCall:
    request: ChatRequest
    purpose: str
    candidates: list[Tool]
    single: bool


class ToolCallBridge:
    """Turns bound LangChain calls into constrained backbone requests and answers into
    ``AIMessage`` tool calls. ``account`` (the memory method) holds the counters: tokens per
    purpose in its ``token_usage``, unusable answers in its ``fallbacks`` (and on the
    backbone)."""

    def __init__(
        self,
        llm: Callable[[], Backbone],
        account: Any,
        *,
        max_calls: int = 3,
        field_chars: int = 400,
        max_items: int = 4,
        caps: dict[str, int | None] | None = None,
        temperature: float = 0.0,
    ) -> None:
        self._llm = llm
        self.account = account
        self.max_calls, self.field_chars, self.max_items = max_calls, field_chars, max_items
        self.caps = dict(caps or {})  # purpose -> cap on the reply budget (None: the bound)
        self.temperature = temperature
        self.batcher = LockstepBatcher(self.send)
        self._lock = threading.Lock()

    def prepare(
        self, messages: Sequence[BaseMessage], tools: Sequence[Any] | None, tool_choice: Any
    ) -> PreparedCall:
        candidates = chosen_tools([Tool.of(t) for t in tools or ()], tool_choice)
        names = {t.name for t in candidates}
        purpose = (
            "repair"
            if "PatchFunctionErrors" in names
            else "update"
            if names & {"PatchDoc", "RemoveDoc"}
            else "extract"
        )
        schema = None
        extra = ""
        cap = self.caps.get(purpose)
        budget = self.field_chars if cap is None else min(cap, self.field_chars)
        if candidates:
            schema = reply_schema(candidates, self.max_calls, self.field_chars, self.max_items)
            extra = tools_section(candidates, self.max_calls)
            budget = reply_tokens(schema, cap)
        request = ChatRequest(
            messages=to_chat_messages(messages, extra),
            json_schema=schema,
            max_tokens=budget,
            temperature=self.temperature,
        )
        return PreparedCall(request, purpose, candidates, single_form(candidates, self.max_calls))

    def send(self, requests: list[ChatRequest], purposes: list[str]) -> list[Completion]:
        """One batched backbone call; its tokens counted per purpose."""
        llm = self._llm()
        with self._lock:  # a backbone serves one batch at a time
            completions = llm.generate(list(requests))
        for purpose in dict.fromkeys(purposes):
            mine = [c for c, p in zip(completions, purposes, strict=True) if p == purpose]
            add_usage(self.account.token_usage.setdefault(purpose, {}), mine)
        return completions

    def answer(self, call: PreparedCall, completion: Completion) -> AIMessage:
        """The AIMessage of a completion: its tool calls, or none (a counted fallback)."""
        tokens = {
            "input_tokens": completion.prompt_tokens,
            "output_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
        }
        if not call.candidates:
            return AIMessage(content=completion.text, usage_metadata=tokens)
        calls = None if completion.fallback else parse_calls(completion.text, call)
        if calls is None:
            record_fallback(self._llm(), FALLBACK, self.account.fallbacks)
            return AIMessage(content="", usage_metadata=tokens)
        digest = hashlib.sha256(
            json.dumps([call.request.messages, completion.text], sort_keys=True).encode()
        ).hexdigest()[:12]
        tool_calls = [
            {"name": name, "args": args, "id": f"call_{digest}_{k}", "type": "tool_call"}
            for k, (name, args) in enumerate(calls)
        ]
        return AIMessage(content="", tool_calls=tool_calls, usage_metadata=tokens)


def parse_calls(text: str, call: PreparedCall) -> list[tuple[str, dict]] | None:
    """(tool name, arguments) of each call in a reply, or None when the reply is unusable."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return None
    if call.single:
        return [(call.candidates[0].name, value)] if isinstance(value, dict) else None
    names = {t.name for t in call.candidates}
    items = value.get("calls") if isinstance(value, dict) else None
    if not isinstance(items, list) or not items:
        return None
    out = []
    for item in items:
        if not isinstance(item, dict):
            return None
        name, args = item.get("tool"), item.get("args")
        if name not in names or not isinstance(args, dict):
            return None
        out.append((name, args))
    return out


class LockstepBatcher:
    """Requests of concurrent asyncio workers sent as one backbone call: a request waits until
    every worker still running has one waiting. ``join(n)`` before starting n workers; each
    worker calls ``leave()`` when it ends. Outside a wave (no worker joined) a request is sent
    at once."""

    def __init__(self, send: Callable[[list[ChatRequest], list[str]], list[Completion]]) -> None:
        self._send = send
        self._active = 0
        self._pending: list[tuple[ChatRequest, str, asyncio.Future]] = []
        self.batches = 0  # backbone calls made (a test reads it)

    def join(self, workers: int) -> None:
        self._active += workers

    def leave(self) -> None:
        self._active -= 1
        self._flush_if_ready()

    async def ask(self, request: ChatRequest, purpose: str) -> Completion:
        if self._active <= 0:
            self.batches += 1
            return self._send([request], [purpose])[0]
        future = asyncio.get_running_loop().create_future()
        self._pending.append((request, purpose, future))
        self._flush_if_ready()
        return await future

    def _flush_if_ready(self) -> None:
        if not self._pending or len(self._pending) < self._active:
            return
        batch, self._pending = self._pending, []
        self.batches += 1
        try:
            completions = self._send([r for r, _, _ in batch], [p for _, p, _ in batch])
        except Exception as err:  # every waiting worker gets the error
            for _, _, future in batch:
                future.set_exception(err)
            return
        for (_, _, future), completion in zip(batch, completions, strict=True):
            future.set_result(completion)


class BackboneChatModel(BaseChatModel):
    """A LangChain chat model answered by a memarena backbone (see the module docstring)."""

    bridge: Any  # ToolCallBridge

    @property
    def _llm_type(self) -> str:
        return "memarena-backbone"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        call = self.bridge.prepare(messages, kwargs.get("tools"), kwargs.get("tool_choice"))
        completion = self.bridge.send([call.request], [call.purpose])[0]
        return _result(self.bridge.answer(call, completion))

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        call = self.bridge.prepare(messages, kwargs.get("tools"), kwargs.get("tool_choice"))
        completion = await self.bridge.batcher.ask(call.request, call.purpose)
        return _result(self.bridge.answer(call, completion))


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])
