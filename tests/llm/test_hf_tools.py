"""HFBackbone with native tool calls, on the real embedded SmolLM2-135M (offline, CPU float32).

SmolLM2's own chat template has no tool support: ``tools_template="hermes"`` (the preset's
setting) templates requests with tools through memarena's ChatML tool template, and leaves
every other request exactly as the model's own template renders it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.core.tool_calls import assistant_message, bfcl_tools, parse_tool_calls
from memarena.llm.hf import HFBackbone
from memarena.llm.tool_templates import BUILTIN

MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"  # as in test_hf_backbone.py
PINNED = {"device": "cpu", "dtype": "float32", "cache_path": None, "converted_dir": MODELS}

DOCS = [
    {"name": "cd", "description": "Change the current directory.",
     "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}},
                    "required": ["folder"]}},
    {"name": "ls", "description": "List the current directory.",
     "parameters": {"type": "dict", "properties": {}, "required": []}},
]  # fmt: skip
TOOLS = bfcl_tools(DOCS)
HISTORY = [
    {"role": "system", "content": "You operate a file system."},
    {"role": "user", "content": "Go to docs and list it."},
    assistant_message(
        '<tool_call>\n{"name": "cd", "arguments": {"folder": "docs"}}\n</tool_call>', "call_1"
    ),
    {
        "role": "tool",
        "tool_call_id": "call_1_0",
        "name": "cd",
        "content": '{"current_working_directory": "docs"}',
    },
]


@pytest.fixture(scope="module")
def plain() -> HFBackbone:
    return HFBackbone(max_new_tokens=24, **PINNED)


@pytest.fixture(scope="module")
def tools_hf(plain) -> HFBackbone:
    return HFBackbone(max_new_tokens=24, tools_template="hermes", **PINNED)


def _prompt(bb: HFBackbone, request: ChatRequest) -> str:
    return bb.tokenizer.decode(bb.encode_prompt(request))


def test_native_tools_follow_the_template(plain, tools_hf):
    assert not plain.native_tools and tools_hf.native_tools  # SmolLM2's template: no tools
    assert tools_hf.model is plain.model  # one copy of the weights
    assert tools_hf.cache_model == plain.cache_model
    assert tools_hf.tools_identity.startswith("hermes:")
    with pytest.raises(ConfigError, match="tools_template=hermes"):
        plain.generate([ChatRequest(HISTORY, tools=TOOLS)])
    with pytest.raises(ConfigError, match="tools_template=hermes"):
        plain.encode_prompt(ChatRequest(HISTORY, tools=TOOLS))
    # a chat template that renders tools itself is native without a tools template
    own = HFBackbone(chat_template=BUILTIN["hermes"].read_text(), **PINNED)
    assert own.native_tools and own.tools_identity == ""
    assert own.encode_prompt(ChatRequest(HISTORY, tools=TOOLS)) == tools_hf.encode_prompt(
        ChatRequest(HISTORY, tools=TOOLS)
    )
    own.close()


def test_a_request_with_tools_renders_them_and_the_call_history(tools_hf):
    text = _prompt(tools_hf, ChatRequest(HISTORY, tools=TOOLS))
    assert text.startswith("<|im_start|>system\nYou operate a file system.\n\n# Tools\n")
    tools_part = text.split("<tools>\n")[1].split("\n</tools>")[0]  # one JSON tool a line
    assert [json.loads(line) for line in tools_part.splitlines()] == TOOLS
    assert '"name": "cd"' in tools_part and '"type": "object"' in tools_part  # BFCL's dict
    assert (
        "<|im_start|>user\nGo to docs and list it.<|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n"
        '{"name": "cd", "arguments": {"folder": "docs"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n"
        '{"current_working_directory": "docs"}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\n"
    ) in text
    assert text.endswith("<|im_start|>assistant\n")


def test_a_request_without_tools_renders_as_before(plain, tools_hf):
    request = ChatRequest(HISTORY[:2] + [{"role": "assistant", "content": "cd docs"},
                                         {"role": "user", "content": "done"}])  # fmt: skip
    own = plain.tokenizer.apply_chat_template(
        request.messages,
        chat_template=plain.tokenizer.chat_template,
        tokenize=False,
        add_generation_prompt=True,
    )
    assert _prompt(tools_hf, request) == _prompt(plain, request) == own
    assert "<tools>" not in own
    # its cache key too: the tools template names the keys of requests with tools only
    assert tools_hf.request_model(request) == plain.request_model(request) == plain.cache_model
    with_tools = ChatRequest(HISTORY, tools=TOOLS)
    assert tools_hf.request_model(with_tools) == (
        f"{tools_hf.cache_model}:tools={tools_hf.tools_identity}"
    )


def test_generation_with_tools_gives_text_or_parseable_calls(tools_hf):
    (out,) = tools_hf.generate([ChatRequest(HISTORY, tools=TOOLS, max_tokens=24)])
    assert out.fallback is None and out.completion_tokens > 0
    assert out.prompt_tokens > len(tools_hf.encode_prompt(ChatRequest(HISTORY)))  # + the tools
    content, calls = parse_tool_calls(out.text)
    assert content or calls
    assert all(isinstance(c["name"], str) and isinstance(c["arguments"], dict) for c in calls)
