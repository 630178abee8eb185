"""Native tool calls as plain data: the ``<tool_call>`` text form, chat messages, tool schemas.

A completion stays text on every engine: each call a model makes is one block

    <tool_call>
    {"name": "cd", "arguments": {"folder": "docs"}}
    </tool_call>

the form Qwen2.5/Qwen3 and Hermes chat templates make a model write (and the one memarena's
``hermes`` tools template renders an assistant's ``tool_calls`` as); the openai engine writes
the API's ``tool_calls`` into the same form, after the message's content. So the call cache
holds one format, and ``parse_tool_calls`` reads every engine's answers.

- ``parse_tool_calls(text)``: (content, calls); ``render_tool_calls(calls)``: the blocks;
- ``assistant_message(text, id_prefix)``: the assistant chat message of a reply, with
  ``tool_calls`` (arguments as dicts, as HF chat templates expect);
- ``to_openai_messages(messages)``: the same messages as the OpenAI API wants them;
- ``bfcl_tools(docs)``: BFCL function documents as OpenAI function tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memarena.core.llm_types import Message

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
# a block's body never holds another opening tag: an unclosed block ends where the next starts
_BLOCK = re.compile(
    r"<tool_call>((?:(?!<tool_call>).)*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


# -- the text form ----------------------------------------------------------------------------
def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(the reply's content, its calls as ``{"name": str, "arguments": dict}``, in order).

    The content is ``text`` without its ``<think>...</think>`` blocks (and, when a reply starts
    inside a thinking block the prompt opened, everything up to its ``</think>``) and without
    the call blocks, stripped. A block is a call when its body is one JSON object with a
    non-empty string ``name`` and ``arguments`` that are an object, a JSON string of an object,
    or absent (``{}``); ``parameters`` is read when ``arguments`` is absent. Any other block
    stays in the content, as written. A block without ``</tool_call>`` (a reply cut by a stop
    string or the token limit) ends where the next one starts, or at the end of the text.
    """
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    last = 0
    for match in _BLOCK.finditer(text):
        call = _call(match.group(1))
        if call is None:
            continue
        kept.append(text[last : match.start()])
        last = match.end()
        calls.append(call)
    kept.append(text[last:])
    return "".join(kept).strip(), calls


def _call(body: str) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    arguments = _arguments(arguments)
    if arguments is None:
        return None
    return {"name": name, "arguments": arguments}


def _arguments(value: Any) -> dict[str, Any] | None:
    """A call's arguments as a dict: a dict, a JSON string of one, or None/"" (no arguments)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return dict(value) if isinstance(value, Mapping) else None


def render_tool_calls(calls: Sequence[Mapping[str, Any]]) -> str:
    """The ``<tool_call>`` blocks of ``calls``, joined by a newline.

    A call is ``{"name", "arguments"}`` or an API/chat-message call
    ``{"function": {"name", "arguments"}}``; arguments given as a JSON string are decoded, so
    every engine's calls read the same.
    """
    blocks = []
    for call in calls:
        function = call.get("function", call)
        arguments = function.get("arguments")
        decoded = _arguments(arguments)
        body = {"name": function["name"], "arguments": arguments if decoded is None else decoded}
        line = json.dumps(body, ensure_ascii=False)
        blocks.append(f"{TOOL_CALL_OPEN}\n{line}\n{TOOL_CALL_CLOSE}")
    return "\n".join(blocks)


# -- chat messages ----------------------------------------------------------------------------
def assistant_message(text: str, id_prefix: str) -> Message:
    """The assistant message of a reply: ``{"role": "assistant", "content": <content>}`` plus,
    when it calls tools, ``tool_calls`` with ids ``f"{id_prefix}_{k}"`` (k = 0, 1, ... in call
    order) for the tool messages that answer them."""
    content, calls = parse_tool_calls(text)
    message: Message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"{id_prefix}_{k}",
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for k, call in enumerate(calls)
        ]
    return message


def to_openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as the OpenAI chat API takes them.

    Assistant ``tool_calls`` carry their arguments as JSON strings; a missing or None content
    becomes "" (the API and servers' chat templates both take that); a tool message keeps
    ``role``, ``tool_call_id`` and ``content`` (as text) only. Other messages are copied as
    they are.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            content = message.get("content")
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(message.get("tool_call_id", "")),
                    "content": content if isinstance(content, str) else json.dumps(content),
                }
            )
            continue
        copy = dict(message)
        if copy.get("content") is None:
            copy["content"] = ""
        if role == "assistant" and copy.get("tool_calls"):
            copy["tool_calls"] = [_openai_call(call) for call in copy["tool_calls"]]
        elif "tool_calls" in copy:  # an empty list: the API rejects it
            del copy["tool_calls"]
        out.append(copy)
    return out


def _openai_call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": str(call.get("id", "")),
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


# -- tool schemas -----------------------------------------------------------------------------
# BFCL's type names (bfcl_eval.constants.type_mappings.GORILLA_TO_OPENAPI) as JSON-schema types;
# "any" has none (BFCL's own converter says "string", which would forbid numbers and lists).
# bfcl_eval's convert_to_tool is not used: its module imports tree-sitter parsers for Java and
# JavaScript (not installed with `pip install --no-deps bfcl-eval`).
BFCL_TYPES: dict[str, str | None] = {
    "dict": "object",
    "object": "object",
    "HashMap": "object",
    "Hashtable": "object",
    "float": "number",
    "double": "number",
    "number": "number",
    "integer": "integer",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "Bigint": "integer",
    "string": "string",
    "String": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "Boolean": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "ArrayList": "array",
    "Array": "array",
    "Queue": "array",
    "Stack": "array",
    "any": None,
    "Any": None,
}


def bfcl_tools(docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """BFCL function documents (``{"name", "description", "parameters": {"type": "dict",
    "properties", "required"}, "response"}``) as OpenAI function tools: BFCL types become
    JSON-schema types (dict -> object, float -> number, tuple -> array, any -> no type) in
    ``parameters`` and everything nested in it; the ``response`` document is left out."""
    return [
        {
            "type": "function",
            "function": {
                "name": doc["name"],
                "description": doc.get("description", ""),
                "parameters": _schema(doc.get("parameters") or {"type": "dict", "properties": {}}),
            },
        }
        for doc in docs
    ]


def _schema(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            kind = _json_type(value)
            if kind is not None:
                out["type"] = kind
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _schema(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out[key] = [_schema(sub) for sub in value]
        else:
            out[key] = value
    return out


def _json_type(value: Any) -> str | list[str] | None:
    if isinstance(value, list):
        kinds = [k for k in (_json_type(v) for v in value) if k is not None]
        return kinds if len(kinds) == len(value) else None
    if value not in BFCL_TYPES:
        raise ValueError(
            f"bfcl_tools: unknown BFCL type {value!r}; known: {', '.join(sorted(BFCL_TYPES))}"
        )
    return BFCL_TYPES[value]
