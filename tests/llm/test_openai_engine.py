"""OpenAIBackbone without a server: request bodies per structured mode, answer decoding, retries
with backoff, per-request failures, the API key, and running inside an event loop."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import pytest
from doubles import HISTORY, TOOLS
from needs import module_needs

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.core.tool_calls import (
    parse_tool_calls,
    render_tool_calls,
    to_openai_messages,
)
from memarena.llm.openai_engine import (
    OpenAIBackbone,
    build_body,
    extract_json,
    match_choice,
    strict_compatible,
    tool_calls_text,
)

MSG = [{"role": "user", "content": "hi"}]
SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}


# main dependencies: a missing one fails each test naming the fix (tests/needs.py), never a skip
_needs = module_needs("openai", "httpx")
try:
    import httpx
    import openai
except ImportError:  # the fixture above fails every test of the module
    httpx = openai = None

def _response(text: str, prompt: int = 5, completion: int = 2):
    return SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content=text))],
        usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
    )


def _status_error(cls, status: int, headers: dict | None = None):
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    response = httpx.Response(status, request=request, headers=headers or {})
    return cls(f"status {status}", response=response, body=None)


class FakeClient:
    """Answers ``create(**body)`` with ``script(body, call_number)``: a text or an exception."""

    def __init__(self, script):
        self.script = script
        self.bodies: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = False
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **body):
        self.bodies.append(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            out = self.script(body, len(self.bodies))
        finally:
            self.in_flight -= 1
        if isinstance(out, BaseException):
            raise out
        return out if isinstance(out, SimpleNamespace) else _response(out)

    async def close(self):
        self.closed = True


def make(script, monkeypatch=None, **kwargs):
    kwargs.setdefault("api_key_env", None)
    kwargs.setdefault("backoff_s", 0.0)
    backbone = OpenAIBackbone(model="m", base_url="http://127.0.0.1:9/v1", **kwargs)
    client = FakeClient(script)
    backbone._make_client = lambda: client
    return backbone, client


# -- request bodies ---------------------------------------------------------------------------
def test_vllm_body_uses_structured_outputs():
    req = ChatRequest(MSG, choices=["a", "b", "a"])
    body = build_body(req, model="m", structured="vllm", chat_template_kwargs={"x": 1})
    assert body["extra_body"] == {
        "chat_template_kwargs": {"x": 1},
        "structured_outputs": {"choice": ["a", "b"]},
    }
    body = build_body(ChatRequest(MSG, json_schema=SCHEMA), model="m", structured="vllm")
    assert body["extra_body"] == {"structured_outputs": {"json": SCHEMA}}


def test_vllm_guided_body_uses_guided_fields_and_chat_template_kwargs():
    req = ChatRequest(MSG, choices=["a", "b", "a"], stop=["\n"], temperature=0.5, seed=3)
    body = build_body(
        req,
        model="m",
        structured="vllm_guided",
        extra_body={"top_k": 20},
        chat_template_kwargs={"enable_thinking": False},
    )
    assert body["extra_body"] == {
        "top_k": 20,
        "chat_template_kwargs": {"enable_thinking": False},
        "guided_choice": ["a", "b"],
    }
    assert body["stop"] == ["\n"] and body["seed"] == 3 and body["temperature"] == 0.5
    assert "response_format" not in body
    body = build_body(ChatRequest(MSG, json_schema=SCHEMA), model="m", structured="vllm_guided")
    assert body["extra_body"] == {"guided_json": SCHEMA}


def test_openai_body_uses_response_format_json_schema():
    body = build_body(ChatRequest(MSG, choices=["go", "stop"]), model="m", structured="openai")
    spec = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert spec["schema"]["properties"]["choice"]["enum"] == ["go", "stop"]
    assert spec["strict"] is True and "extra_body" not in body
    open_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    body = build_body(ChatRequest(MSG, json_schema=open_schema), model="m", structured="openai")
    assert body["response_format"]["json_schema"]["strict"] is False  # auto: not strict-safe
    body = build_body(ChatRequest(MSG, json_schema=SCHEMA), model="m", structured="openai")
    assert body["response_format"]["json_schema"]["strict"] is True
    plain = build_body(ChatRequest(MSG), model="m", structured="openai")
    assert "response_format" not in plain


def test_json_object_and_none_bodies():
    body = build_body(ChatRequest(MSG, choices=["go", "stop"]), model="m", structured="json_object")
    assert body["response_format"] == {
        "type": "json_object",
        "schema": {"type": "string", "enum": ["go", "stop"]},
    }
    body = build_body(ChatRequest(MSG, json_schema=SCHEMA), model="m", structured="none")
    assert "response_format" not in body and "extra_body" not in body


def test_max_tokens_cap_and_stop_limit():
    req = ChatRequest(MSG, max_tokens=900, stop=["a", "b", "c", "d", "e"])
    body = build_body(req, model="m", structured="none", max_tokens_cap=256)
    assert body["max_tokens"] == 256 and body["stop"] == ["a", "b", "c", "d"]


def test_strict_compatible():
    assert strict_compatible(SCHEMA)
    assert not strict_compatible({"type": "string"})
    nested = {**SCHEMA, "properties": {"x": {"type": "object", "properties": {"y": {}}}}}
    assert not strict_compatible(nested)


# -- decoding answers -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("go to desk 1", (1, False)),
        ('{"choice": "go to desk 1"}', (1, False)),
        ('"open drawer"', (0, False)),
        ("Go To Desk 1", (1, True)),
        ("I will go to desk 10 now", (2, True)),  # the longest contained choice
        ("dance", (None, False)),
    ],
)
def test_match_choice(text, expected):
    assert match_choice(text, ["open drawer", "go to desk 1", "go to desk 10"]) == expected


def test_extract_json():
    assert extract_json('Sure! ```json\n{"x": 1}\n``` done', SCHEMA) == '{"x": 1}'
    assert extract_json('answer: {"x": 2} ok', SCHEMA) == '{"x": 2}'
    assert extract_json("no json", SCHEMA) is None


def test_generate_decodes_choices_and_json_with_fallback_kinds():
    answers = {
        "c1": '{"choice": "b"}',
        "c2": "I pick B.",
        "c3": "neither",
        "j1": '{"x": 3}',
        "j2": 'here: {"x": 4}',
        "j3": "{oops",
    }

    def script(body, n):
        return answers[body["messages"][0]["content"]]

    backbone, client = make(script, structured="openai")
    reqs = [
        ChatRequest([{"role": "user", "content": k}], choices=["a", "b"])
        for k in ("c1", "c2", "c3")
    ] + [
        ChatRequest([{"role": "user", "content": k}], json_schema=SCHEMA)
        for k in ("j1", "j2", "j3")
    ]
    out = backbone.generate(reqs)
    assert [(c.text, c.choice_index, c.fallback) for c in out[:3]] == [
        ("b", 1, None),
        ("b", 1, "choice_parsed"),
        ("neither", None, "choice_unmatched"),
    ]
    assert [(c.text, c.fallback) for c in out[3:]] == [
        ('{"x": 3}', None),
        ('{"x": 4}', "json_extracted"),
        ("{oops", "json_invalid"),
    ]
    assert out[0].prompt_tokens == 5 and out[0].completion_tokens == 2
    fallbacks = backbone.usage.to_dict()["fallbacks"]
    assert fallbacks == {
        "choice_parsed": 1,
        "choice_unmatched": 1,
        "json_extracted": 1,
        "json_invalid": 1,
    }
    backbone.close()
    assert client.closed


# -- tools ----------------------------------------------------------------------------------
CALLS = [{"name": "cd", "arguments": {"folder": "docs"}}, {"name": "ls", "arguments": {}}]


def _tool_response(content, calls):
    api_calls = [
        SimpleNamespace(
            id=f"c{i}",
            type="function",
            function=SimpleNamespace(name=c["name"], arguments=json.dumps(c["arguments"])),
        )
        for i, c in enumerate(calls)
    ]
    message = SimpleNamespace(content=content, tool_calls=api_calls or None)
    return SimpleNamespace(
        choices=[SimpleNamespace(message=message)],
        usage=SimpleNamespace(prompt_tokens=7, completion_tokens=3),
    )


def test_tools_body_sends_tools_and_api_style_messages():
    body = build_body(ChatRequest(HISTORY, tools=TOOLS), model="m", structured="vllm")
    assert body["tools"] == TOOLS and body["messages"] == to_openai_messages(HISTORY)
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"folder": "docs"}'
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "call_0_0", "content": "ok"}
    plain = build_body(ChatRequest(MSG), model="m", structured="vllm")
    assert "tools" not in plain and plain["messages"] == MSG


def test_answer_tool_calls_become_tool_call_blocks_after_the_content():
    def script(body, n):
        if body.get("stop"):  # content cut at its stop string; the calls stay whole
            return _tool_response("Going there.\nSTOP and more", CALLS)
        return _tool_response(None, CALLS[:1])

    backbone, client = make(script)
    out = backbone.generate([
        ChatRequest(HISTORY, tools=TOOLS, stop=["STOP", "\n"]),
        ChatRequest(HISTORY, tools=TOOLS),
    ])  # fmt: skip
    assert out[0].text == "Going there.\n" + render_tool_calls(CALLS)
    assert parse_tool_calls(out[0].text) == ("Going there.", CALLS)
    assert out[1].text == render_tool_calls(CALLS[:1]) and out[1].fallback is None
    assert out[1].prompt_tokens == 7 and all(b["tools"] == TOOLS for b in client.bodies)
    # plain dicts (some clients) read the same
    dicts = [{"function": {"name": "ls", "arguments": "{}"}}]
    assert tool_calls_text(dicts) == render_tool_calls(CALLS[1:]) and tool_calls_text(None) == ""
    backbone.close()


def test_a_servers_reasoning_stays_with_a_tool_reply_as_a_think_block():
    """A server that splits the reasoning off (reasoning_content) gives the reply the local
    engines give: the reasoning in a <think> block before the content and the calls, parsed
    away from the action and kept for the record (ReMe's summarizer reads it)."""

    def script(body, n):
        response = _tool_response("Listing first.", CALLS[:1])
        response.choices[0].message.reasoning_content = "The user wants the files."
        return response

    backbone, _ = make(script)
    (out,) = backbone.generate([ChatRequest(HISTORY, tools=TOOLS)])
    assert out.text.startswith("<think>\nThe user wants the files.\n</think>")
    assert parse_tool_calls(out.text) == ("Listing first.", CALLS[:1])
    backbone.close()


def test_tools_need_native_tools():
    default, _ = make(lambda body, n: "x")
    assert default.native_tools  # the default: OpenAI and vllm serve take tools
    default.close()
    backbone, client = make(lambda body, n: "x", native_tools=False)
    with pytest.raises(ConfigError, match="native_tools is false"):
        backbone.generate([ChatRequest(HISTORY, tools=TOOLS)])
    assert client.bodies == [] and backbone.generate([ChatRequest(MSG)])[0].text == "x"
    backbone.close()


# -- concurrency, retries, failures ---------------------------------------------------------
def test_concurrency_limit_and_order():
    backbone, client = make(lambda body, n: body["messages"][0]["content"], concurrency=3)
    reqs = [ChatRequest([{"role": "user", "content": f"r{i}"}]) for i in range(10)]
    out = backbone.generate(reqs)
    assert [c.text for c in out] == [f"r{i}" for i in range(10)]
    assert client.max_in_flight == 3
    backbone.close()


@pytest.mark.parametrize(
    "error",
    [
        lambda: _status_error(openai.RateLimitError, 429),
        lambda: _status_error(openai.InternalServerError, 503),
        lambda: openai.APITimeoutError(request=httpx.Request("POST", "http://x")),
        lambda: openai.APIConnectionError(request=httpx.Request("POST", "http://x")),
    ],
    ids=["429", "503", "timeout", "connection"],
)
def test_retries_with_exponential_backoff(monkeypatch, error):
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay, *args, **kwargs):
        if delay >= 0.05:  # a backoff (the fake client's own 0.01 s naps pass through)
            sleeps.append(delay)
            delay = 0
        await real_sleep(delay, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    backbone, client = make(
        lambda body, n: error() if n <= 3 else "ok", max_retries=4, backoff_s=0.5
    )
    (out,) = backbone.generate([ChatRequest(MSG)])
    assert out.text == "ok" and out.fallback is None
    assert sleeps == [0.5, 1.0, 2.0] and len(client.bodies) == 4
    backbone.close()


def test_retry_after_header_is_honoured(monkeypatch):
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay, *args, **kwargs):
        if delay >= 0.05:
            sleeps.append(delay)
            delay = 0
        await real_sleep(delay, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    err = _status_error(openai.RateLimitError, 429, {"retry-after": "7"})
    backbone, _ = make(lambda body, n: err if n == 1 else "ok", backoff_s=0.5)
    assert backbone.generate([ChatRequest(MSG)])[0].text == "ok"
    assert sleeps == [7.0]


def test_exhausted_retries_and_bad_requests_fail_per_request_and_are_not_cached(tmp_path):
    def script(body, n):
        content = body["messages"][0]["content"]
        if content == "bad":
            return _status_error(openai.BadRequestError, 400)
        if content == "down":
            return _status_error(openai.InternalServerError, 500)
        return "fine"

    cache = tmp_path / "calls.sqlite"
    backbone, client = make(script, max_retries=2, cache_path=cache)
    reqs = [ChatRequest([{"role": "user", "content": c}]) for c in ("bad", "down", "ok")]
    out = backbone.generate(reqs)
    assert [(c.text, c.fallback) for c in out] == [
        ("", "request_failed"),
        ("", "request_failed"),
        ("fine", None),
    ]
    calls = [b["messages"][0]["content"] for b in client.bodies]
    assert calls.count("bad") == 1 and calls.count("down") == 3  # 400: no retry; 500: 2 more
    assert backbone.usage.to_dict()["fallbacks"] == {"request_failed": 2}
    again = backbone.generate(reqs)  # failures are asked again, the answer comes from the cache
    assert [c.cached for c in again] == [False, False, True]
    backbone.close()


def test_rejected_key_raises_config_error(monkeypatch):
    monkeypatch.setenv("MEMARENA_TEST_KEY", "sk-wrong")
    err = _status_error(openai.AuthenticationError, 401)
    backbone, _ = make(lambda body, n: err, api_key_env="MEMARENA_TEST_KEY")
    with pytest.raises(ConfigError, match="MEMARENA_TEST_KEY"):
        backbone.generate([ChatRequest(MSG)])
    backbone.close()


def test_missing_key_variable_is_a_config_error(monkeypatch):
    monkeypatch.delenv("MEMARENA_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="MEMARENA_TEST_KEY.*api_key_env=null"):
        OpenAIBackbone(model="m", api_key_env="MEMARENA_TEST_KEY")
    monkeypatch.setenv("MEMARENA_TEST_KEY", "sk-x")
    backbone = OpenAIBackbone(model="m", api_key_env="MEMARENA_TEST_KEY")
    assert backbone.api_key == "sk-x"
    assert backbone.cache_model == "openai:https://api.openai.com/v1:m"


def test_bad_structured_mode_is_a_config_error():
    with pytest.raises(
        ConfigError, match="Valid choices: vllm, vllm_guided, openai, json_object, none"
    ):
        OpenAIBackbone(model="m", api_key_env=None, structured="guided")


def test_works_inside_a_running_event_loop():
    backbone, _ = make(lambda body, n: "ok")

    async def main():
        return backbone.generate([ChatRequest(MSG)])

    assert asyncio.run(main())[0].text == "ok"
    backbone.close()


def test_template_kwargs_change_cache_identity():
    a = OpenAIBackbone(model="m", base_url="http://h/v1", api_key_env=None)
    b = OpenAIBackbone(
        model="m",
        base_url="http://h/v1",
        api_key_env=None,
        chat_template_kwargs={"enable_thinking": False},
    )
    assert a.cache_model == "openai:http://h/v1:m"
    assert b.cache_model.startswith(a.cache_model + ":")
    assert json.loads(json.dumps(b.body(ChatRequest(MSG))))["extra_body"] == {
        "chat_template_kwargs": {"enable_thinking": False}
    }
