"""Native tool calls as plain data (memarena.core.tool_calls): the ``<tool_call>`` text form,
chat messages for templates and for the OpenAI API, and BFCL function documents as tools."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from needs import need_module

from memarena.core import (
    ChatRequest,
    assistant_message,
    bfcl_tools,
    parse_tool_calls,
    render_tool_calls,
    to_openai_messages,
)

CALLS = [
    {"name": "cd", "arguments": {"folder": "docs"}},
    {"name": "echo", "arguments": {"content": 'héllo "x"\n', "file_name": "a.txt"}},
    {"name": "ls", "arguments": {}},
]


# -- the text form ----------------------------------------------------------------------------
def test_render_then_parse_is_the_identity():
    text = render_tool_calls(CALLS)
    first = ["<tool_call>", '{"name": "cd", "arguments": {"folder": "docs"}}', "</tool_call>"]
    assert text.split("\n")[:3] == first
    assert "héllo" in text  # ensure_ascii=False
    assert text.count("<tool_call>") == 3 and "</tool_call>\n<tool_call>" in text
    assert parse_tool_calls(text) == ("", CALLS)
    # content around the calls is kept (stripped), calls in order
    content, calls = parse_tool_calls(f"I will look.\n{text}\n")
    assert content == "I will look." and calls == CALLS


def test_compact_blocks_string_arguments_and_parameters_are_calls():
    text = (
        '<tool_call>{"name": "cd", "arguments": "{\\"folder\\": \\"docs\\"}"}</tool_call>'
        '<tool_call> {"name": "ls"} </tool_call>'
        '<tool_call>{"name": "mv", "parameters": {"source": "a", "destination": "b"}}</tool_call>'
    )
    assert parse_tool_calls(text) == ("", [
        {"name": "cd", "arguments": {"folder": "docs"}},
        {"name": "ls", "arguments": {}},
        {"name": "mv", "arguments": {"source": "a", "destination": "b"}},
    ])  # fmt: skip


def test_malformed_blocks_stay_in_the_content():
    bad = [
        "<tool_call>{not json}</tool_call>",
        '<tool_call>{"arguments": {"a": 1}}</tool_call>',  # no name
        '<tool_call>{"name": "", "arguments": {}}</tool_call>',  # empty name
        '<tool_call>["cd", "docs"]</tool_call>',  # not an object
        '<tool_call>{"name": "cd", "arguments": [1, 2]}</tool_call>',  # arguments not an object
        '<tool_call>{"name": "cd", "arguments": "not json"}</tool_call>',
    ]
    good = render_tool_calls(CALLS[:1])
    text = "\n".join([bad[0], good, *bad[1:]])
    content, calls = parse_tool_calls(text)
    assert calls == CALLS[:1]
    assert content == "\n".join([bad[0], "", *bad[1:]])


def test_unclosed_blocks_end_at_the_next_block_or_the_end():
    text = '<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n<tool_call>{"name": "ls"}'
    assert parse_tool_calls(text) == ("", [
        {"name": "cd", "arguments": {"folder": "a"}},
        {"name": "ls", "arguments": {}},
    ])  # fmt: skip
    assert parse_tool_calls('Done.\n<tool_call>{"name": "cd", "argu') == (
        'Done.\n<tool_call>{"name": "cd", "argu',
        [],
    )


def test_think_blocks_are_removed():
    call = render_tool_calls(CALLS[:1])
    assert parse_tool_calls(f"<think>\nI should cd.\n</think>\n\n{call}") == ("", CALLS[:1])
    # a reply that starts inside the thinking block its prompt opened
    assert parse_tool_calls(f"cd first</think>\nOK\n{call}") == ("OK", CALLS[:1])
    # a call written while thinking is not a call
    assert parse_tool_calls(f"<think>{call}</think>No call.") == ("No call.", [])
    assert parse_tool_calls("plain answer") == ("plain answer", [])


def test_render_reads_api_style_calls():
    api = [{"id": "c0", "type": "function",
            "function": {"name": "cd", "arguments": '{"folder": "docs"}'}}]  # fmt: skip
    assert render_tool_calls(api) == render_tool_calls(CALLS[:1])
    assert render_tool_calls([]) == ""


# -- chat messages ----------------------------------------------------------------------------
def test_assistant_message_carries_tool_calls_with_ids():
    text = "Let me look.\n" + render_tool_calls(CALLS[:2])
    assert assistant_message(text, "call_3") == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {"id": "call_3_0", "type": "function", "function": CALLS[0]},
            {"id": "call_3_1", "type": "function", "function": CALLS[1]},
        ],
    }
    assert assistant_message("<think>x</think> cd docs ", "call_4") == {
        "role": "assistant",
        "content": "cd docs",
    }


def test_openai_messages_have_string_arguments_and_plain_tool_messages():
    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "go"},
        assistant_message(render_tool_calls(CALLS[:2]), "call_1"),
        {"role": "tool", "tool_call_id": "call_1_0", "name": "cd", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_1_1", "name": "echo", "content": {"done": 1}},
        {"role": "assistant", "content": None},
    ]
    before = json.dumps(history)
    out = to_openai_messages(history)
    assert json.dumps(history) == before  # the input is not modified
    assert out[:2] == history[:2]
    assert out[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1_0", "type": "function",
             "function": {"name": "cd", "arguments": '{"folder": "docs"}'}},
            {"id": "call_1_1", "type": "function",
             "function": {"name": "echo", "arguments": json.dumps(CALLS[1]["arguments"],
                                                                  ensure_ascii=False)}},
        ],
    }  # fmt: skip
    assert json.loads(out[2]["tool_calls"][1]["function"]["arguments"]) == CALLS[1]["arguments"]
    assert out[3] == {"role": "tool", "tool_call_id": "call_1_0", "content": "ok"}
    assert out[4] == {"role": "tool", "tool_call_id": "call_1_1", "content": '{"done": 1}'}
    assert out[5] == {"role": "assistant", "content": ""}


def test_tools_join_the_cache_key_only_when_given():
    messages = [{"role": "user", "content": "hi"}]
    params = {"type": "dict", "properties": {}, "required": []}
    tools = bfcl_tools([{"name": "ls", "description": "List.", "parameters": params}])
    plain, other = ChatRequest(messages), ChatRequest(messages, tools=tools)
    # a request without tools keeps the key it had before requests had tools (pinned value)
    assert plain.cache_key("m") == (
        "a2067297cb4e30576b0d5ada762ea80f039d3c53ad93848b66acf50e0abb3a20"
    )
    assert other.cache_key("m") != plain.cache_key("m")
    assert ChatRequest(messages, None, None, None, 0.0, 1.0, 128, 0, tools).tools == tools
    with pytest.raises(ValueError, match="tools is an empty list"):
        ChatRequest(messages, tools=[])


# -- BFCL function documents ------------------------------------------------------------------
def test_bfcl_types_become_json_schema_types():
    doc = {
        "name": "f",
        "description": "d",
        "parameters": {
            "type": "dict",
            "properties": {
                "x": {"type": "float", "description": "x", "default": 1.5},
                "pair": {"type": "tuple", "items": {"type": "integer"}},
                "anything": {"type": "any", "description": "no constraint"},
                "opts": {"type": "dict", "properties": {"flag": {"type": "boolean"},
                                                        "type": {"type": "string"}}},
                "rows": {"type": "array", "items": {"type": "array", "items": {"type": "float"}}},
            },
            "required": ["x"],
        },
        "response": {"type": "dict", "properties": {}},
    }  # fmt: skip
    (tool,) = bfcl_tools([doc])
    assert tool == {
        "type": "function",
        "function": {
            "name": "f",
            "description": "d",
            "parameters": {
                "type": "object",
                "properties": {
                    "x": {"type": "number", "description": "x", "default": 1.5},
                    "pair": {"type": "array", "items": {"type": "integer"}},
                    "anything": {"description": "no constraint"},
                    "opts": {"type": "object", "properties": {"flag": {"type": "boolean"},
                                                              "type": {"type": "string"}}},
                    "rows": {"type": "array",
                             "items": {"type": "array", "items": {"type": "number"}}},
                },
                "required": ["x"],
            },
        },
    }  # fmt: skip
    assert doc["parameters"]["properties"]["x"]["type"] == "float"  # the input is not modified
    with pytest.raises(ValueError, match="unknown BFCL type 'complex'"):
        bfcl_tools([{"name": "g", "parameters": {"type": "dict", "properties": {
            "z": {"type": "complex"}}}}])  # fmt: skip


def _types(node) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.add(node["type"])
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    found |= _types(sub)
            elif key in ("items", "additionalProperties"):
                found |= _types(value)
    return found


def test_bfcl_multi_turn_docs_become_valid_tools():
    need_module("bfcl_eval")
    import bfcl_eval
    import jsonschema

    folder = Path(bfcl_eval.__file__).parent / "data" / "multi_turn_func_doc"
    docs = [
        json.loads(line)
        for path in sorted(folder.glob("*.json"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(docs) > 100  # the eight API classes of BFCL v3 multi-turn
    tools = bfcl_tools(docs)
    assert [t["function"]["name"] for t in tools] == [d["name"] for d in docs]
    json_types = {"object", "array", "string", "number", "integer", "boolean", "null"}
    for tool in tools:
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and "response" not in tool["function"]
        assert _types(params) <= json_types, tool["function"]["name"]
        jsonschema.Draft202012Validator.check_schema(params)
    by_name = {t["function"]["name"]: t["function"] for t in tools}
    assert by_name["cd"]["parameters"] == {
        "type": "object",
        "properties": {"folder": {"type": "string", "description": (
            "The folder of the directory to change to. You can only change one folder at a time. "
        )}},
        "required": ["folder"],
    }  # fmt: skip
    assert by_name["add"]["parameters"]["properties"]["a"]["type"] == "number"  # float
    assert by_name["mean"]["parameters"]["properties"]["numbers"]["items"] == {"type": "number"}
    updates = by_name["edit_ticket"]["parameters"]["properties"]["updates"]
    assert updates["type"] == "object"  # dict, with its own typed properties
    assert updates["properties"]["priority"]["type"] == "integer"
    # a call the model could make validates against its tool's parameters
    jsonschema.validate({"ticket_id": 3, "updates": {"priority": 2}},
                        by_name["edit_ticket"]["parameters"])  # fmt: skip
