"""Agent prompt pieces for BFCL v3 multi-turn (written for memarena)."""

from __future__ import annotations

import json
from typing import Any

SYSTEM = """\
You are an assistant that fulfils a user's requests by calling functions of a set of \
stateful APIs (a file system, messaging, social posting, ticketing, trading, travel booking, \
vehicle control, math). The user speaks in turns. Within a turn you may call functions over \
several steps, reading each step's results before the next; when the current request is \
done (or cannot be done with the functions you have), send NEXT to hand the turn back. \
Changes you make persist across turns. Only the functions listed are available.

Available functions ({doc_kind}):
{functions}"""

ACTION_FORMAT = (
    "Reply with either a Python-style list of function calls with keyword arguments and "
    "literal values, e.g. [cd(folder='document'), mkdir(dir_name='temp')], or with NEXT to end "
    "the current turn. Nothing else."
)

TOOL_CALL_FORMAT = (
    "To call functions, reply with one block per call of the form "
    '<tool_call>{"name": <function name>, "arguments": {<parameter>: <value>, ...}}</tool_call>'
    ', e.g. <tool_call>{"name": "cd", "arguments": {"folder": "document"}}</tool_call> '
    "(several blocks make several calls in one step); or reply with NEXT to end the current "
    "turn. Nothing else."
)
ACTION_FORMATS = {"python": ACTION_FORMAT, "tool_call": TOOL_CALL_FORMAT}

# native tool calls: the functions travel as the request's tools (the chat template or the
# OpenAI API shows them), so the system message does not list them
TOOLS_SYSTEM = SYSTEM.split("\n\nAvailable functions", 1)[0]
TOOLS_ACTION_FORMAT = (
    "Call the functions you need with your tool calls (several in one step if you like), or "
    "reply with NEXT to end the current turn."
)

RELEASE_MESSAGE = "New functions are available:\n{functions}"


DOC_FORMATS = ("json", "compact")
_DOC_KINDS = {"json": "JSON documents", "compact": "signatures with descriptions"}


def render_functions(docs: list[dict[str, Any]], doc_format: str = "json") -> str:
    """The package's function documents, one per line: as JSON (BFCL's own form) or compact,
    ``name(param: type, opt: type = default) - description`` plus one line per parameter
    (about a third of the tokens: for small models and short contexts)."""
    if doc_format == "json":
        return "\n".join(json.dumps(d, ensure_ascii=False) for d in docs)
    return "\n".join(_compact(d) for d in docs)


def _compact(doc: dict[str, Any]) -> str:
    params = doc.get("parameters", {}) or {}
    props: dict[str, Any] = params.get("properties", {}) or {}
    required = set(params.get("required", []) or [])
    sig, lines = [], []
    for name, spec in props.items():
        kind = spec.get("type", "any")
        default = "" if name in required else f" = {spec.get('default', None)!r}"
        sig.append(f"{name}: {kind}{default}")
        if spec.get("description"):
            lines.append(f"    {name}: {spec['description']}")
    head = f"{doc['name']}({', '.join(sig)}) - {doc.get('description', '').strip()}"
    return "\n".join([head, *lines])


def system_for(docs: list[dict[str, Any]], doc_format: str = "json") -> str:
    return SYSTEM.format(
        functions=render_functions(docs, doc_format), doc_kind=_DOC_KINDS[doc_format]
    )
