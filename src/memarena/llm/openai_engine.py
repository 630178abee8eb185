"""OpenAIBackbone: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp...).

One ``generate(requests)`` sends every request at once with the ``openai`` package's
``AsyncOpenAI`` client, at most ``concurrency`` in flight. Each request is retried with
exponential backoff (``backoff_s * 2**attempt``, or the server's ``Retry-After`` when longer)
on rate limits (429), timeouts (408 and the client's), connection errors and 5xx answers,
``max_retries`` times. Any other 4xx refuses the request itself and is not retried: its error
names the cause, for a prompt over the model's context the prompt's token count and the
model's limit as the server gave them (:func:`refusal`).

Failures: a request that still fails after its retries (or gets a non-retryable 4xx) becomes a
``Completion`` with empty text, ``fallback="request_failed"`` and ``error`` (what failed);
``generate`` never raises for one bad request. The agent's episode that asked ends with status
``error`` and that text (the runner stops the run after ``protocol.max_failed_batches``
consecutive batches in which every request failed), a memory call counts a fallback, and
``usage.json`` counts them. The first failure of each kind is logged with the server's
message, and a batch in which *every* request failed to connect is logged as an error naming
the URL. Such completions are not written to the call cache, so a rerun asks again. The one
exception is a rejected API key (401/403): every later request would fail the same way, so it
raises ``ConfigError`` naming ``api_key_env``.

Structured output (``structured``):

- ``vllm``: ``extra_body={"structured_outputs": {"choice": choices}}`` (or ``{"json": schema}``)
  (``vllm serve``, vLLM >= 0.10.2);
- ``vllm_guided``: ``extra_body={"guided_choice": choices}`` / ``{"guided_json": schema}``, the
  older vLLM form (up to 0.11). vLLM 0.12 removed these keys and *silently ignores* them, so on
  a newer server the output comes back unconstrained (and is then only checked, see below);
- ``openai``: ``response_format={"type": "json_schema", "json_schema": {...}}``; a choice
  request asks for ``{"choice": <one of the choices>}`` (the API wants an object at the top)
  and is decoded back to the choice. ``strict: auto`` sets ``strict`` only for schemas that
  the API's strict mode accepts (every object closed, every property required);
- ``json_object``: ``response_format={"type": "json_object", "schema": schema}``, the form of
  servers that predate ``json_schema`` (llama-cpp-python's server); a choice request asks for
  a JSON string from the enum of the choices;
- ``none``: plain requests; the answer is matched/parsed afterwards.

In every mode the answer is checked: a choice answer that is not exactly a choice is matched
case-insensitively or by containment (``choice_index`` set, fallback ``choice_parsed``) or
gets ``choice_unmatched``; JSON is taken from a code fence or the first ``{...}`` when the
whole text is not valid (``json_extracted``), else ``json_invalid``. The base class counts
every fallback in ``usage``.

Tools (``native_tools``, on by default): a request's ``tools`` go out as the API's ``tools``
and its messages through ``memarena.core.tool_calls.to_openai_messages`` (call arguments as
JSON strings); the answer's ``tool_calls`` come back written as ``<tool_call>`` blocks after
the content, the text form of every engine (``parse_tool_calls`` reads it). ``vllm serve``
takes tools only with ``--enable-auto-tool-choice --tool-call-parser <parser>``
(``scripts/serve_vllm.sh`` passes ``hermes`` for Qwen models); llama-cpp-python's server
templates them with the model's own chat template and answers as text. ``native_tools: false``
makes the agent use its text format with a server that takes no tools.

``generate`` is synchronous. The coroutines run on a private event loop on a helper thread
(started on the first call), so it works the same inside a running loop (a Jupyter notebook).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.llm_types import REQUEST_FAILED, ChatRequest, Completion
from memarena.core.tool_calls import render_tool_calls, to_openai_messages
from memarena.llm.base import BackboneBase, json_matches_schema, plain

log = logging.getLogger(__name__)

STRUCTURED_MODES = ("vllm", "vllm_guided", "openai", "json_object", "none")
OPENAI_URL = "https://api.openai.com/v1"
DUMMY_KEY = "EMPTY"  # what key-less local servers are sent
MAX_STOP = 4  # the OpenAI API accepts at most 4 stop strings; the rest are applied here
# HTTP statuses retried besides 5xx: a timeout and a rate limit. Every other 4xx refuses the
# request itself (too long for the context, a bad parameter, an unknown model): a retry would
# be refused the same way, so it fails at once and its error names the cause (:func:`refusal`)
_RETRY_STATUS = {408, 429}
# the servers' words for a prompt longer than the model's context (vLLM, OpenAI, llama.cpp's
# server, llama-cpp-python), and where they put the two numbers
_CONTEXT = re.compile(
    r"context length|context window|context size|exceed_context|maximum context|too many tokens",
    re.IGNORECASE,
)
_LIMIT = (
    r"maximum context length is (\d+)",
    r"context window of (\d+)",
    r"n_ctx\W+(\d+)",
    r"context (?:length|size) (?:is |of )(\d+)",
)
_PROMPT = (
    r"(\d+) in the messages",
    r"(\d+) input tokens",
    r"messages resulted in (\d+) tokens",
    r"requested tokens \((\d+)\)",
    r"n_prompt_tokens\W+(\d+)",
    r"you requested (\d+) tokens",
)


# -- request bodies -------------------------------------------------------------------------


def choice_schema(choices: Sequence[str], wrap: bool) -> dict[str, Any]:
    """The JSON schema of "one of ``choices``": a string enum, or ``{"choice": ...}``."""
    enum = {"type": "string", "enum": list(dict.fromkeys(choices))}
    if not wrap:
        return enum
    return {
        "type": "object",
        "properties": {"choice": enum},
        "required": ["choice"],
        "additionalProperties": False,
    }


def strict_compatible(schema: Any) -> bool:
    """True when OpenAI's strict mode accepts ``schema``: an object at the top, and every
    object in it closed (``additionalProperties: false``) with all its properties required."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return False
    return _strict_ok(schema)


def _strict_ok(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            if schema.get("additionalProperties", True) is not False:
                return False
            if set(schema.get("required", [])) != set(props):
                return False
        return all(_strict_ok(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strict_ok(v) for v in schema)
    return True


def build_body(
    request: ChatRequest,
    *,
    model: str,
    structured: str,
    strict: bool | str = "auto",
    extra_body: Mapping[str, Any] | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    max_tokens_cap: int | None = None,
) -> dict[str, Any]:
    """Keyword arguments of ``client.chat.completions.create`` for one request."""
    max_tokens = int(request.max_tokens)
    if max_tokens_cap:
        max_tokens = min(max_tokens, int(max_tokens_cap))
    body: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.messages),
        "temperature": float(request.temperature),
        "top_p": float(request.top_p),
        "max_tokens": max(1, max_tokens),
        "seed": int(request.seed),
    }
    if request.stop:
        body["stop"] = list(request.stop)[:MAX_STOP]
    if request.tools is not None:
        body["tools"] = plain(request.tools)
    extra: dict[str, Any] = dict(plain(extra_body or {}))
    if chat_template_kwargs:
        extra["chat_template_kwargs"] = dict(plain(chat_template_kwargs))
    choices, schema = request.choices, request.json_schema
    if structured == "vllm":
        if choices is not None:
            extra["structured_outputs"] = {"choice": list(dict.fromkeys(choices))}
        elif schema is not None:
            extra["structured_outputs"] = {"json": plain(schema)}
    elif structured == "vllm_guided":
        if choices is not None:
            extra["guided_choice"] = list(dict.fromkeys(choices))
        elif schema is not None:
            extra["guided_json"] = plain(schema)
    elif structured == "openai" and (choices is not None or schema is not None):
        if choices is not None:
            schema, name = choice_schema(choices, wrap=True), "choice"
        else:
            schema, name = plain(schema), "answer"
        spec: dict[str, Any] = {"name": name, "schema": schema}
        if strict == "auto":
            spec["strict"] = strict_compatible(schema)
        elif strict is not None:
            spec["strict"] = bool(strict)
        body["response_format"] = {"type": "json_schema", "json_schema": spec}
    elif structured == "json_object" and (choices is not None or schema is not None):
        if choices is not None:
            schema = choice_schema(choices, wrap=False)
        body["response_format"] = {"type": "json_object", "schema": plain(schema)}
    if extra:
        body["extra_body"] = extra
    return body


# -- answers --------------------------------------------------------------------------------
def match_choice(text: str, choices: Sequence[str]) -> tuple[int | None, bool]:
    """(index of the choice ``text`` names, whether it took a lenient match).

    Exact (stripped) text first; then a JSON string or ``{"choice": ...}``; then the same
    case-insensitively; then the longest choice contained in the text (case-insensitive).
    """
    stripped = text.strip()
    if stripped in choices:
        return list(choices).index(stripped), False
    candidates = [stripped]
    try:
        value = json.loads(stripped)
    except (ValueError, TypeError):
        value = None
    if isinstance(value, Mapping) and len(value) == 1:
        value = next(iter(value.values()))
    if isinstance(value, str):
        if value in choices:  # the structured answer itself: not a fallback
            return list(choices).index(value), False
        candidates.insert(0, value.strip())
    lowered = [c.strip().lower() for c in choices]
    for cand in candidates:
        if cand.lower() in lowered:
            return lowered.index(cand.lower()), True
    haystack = stripped.lower()
    best: int | None = None
    for i, choice in enumerate(lowered):
        if choice and choice in haystack and (best is None or len(choice) > len(lowered[best])):
            best = i
    return best, best is not None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str, schema: Mapping[str, Any]) -> str | None:
    """A JSON document valid for ``schema`` inside ``text`` (a code fence, or the first
    ``{...}``/``[...]`` that parses), or None."""
    pieces = [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                _, end = decoder.raw_decode(text, start)
            except ValueError:
                continue
            pieces.append(text[start:end])
            break
    for piece in pieces:
        if json_matches_schema(piece, dict(schema)):
            return piece
    return None


def cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    cuts = [text.find(s) for s in stop or () if s and s in text]
    return text[: min(cuts)] if cuts else text


def finish(
    request: ChatRequest,
    text: str,
    prompt_tokens: int,
    completion_tokens: int,
    tool_calls: str = "",
):
    """The completion of a server answer, with its constraint checked (see module doc).

    ``tool_calls``: the answer's calls as ``<tool_call>`` blocks, written after the content
    (which alone is cut at the stop strings: the server stopped the content, not the calls).
    """
    text = cut_at_stop(text, request.stop)
    if tool_calls:
        text = f"{text.rstrip()}\n{tool_calls}" if text.strip() else tool_calls
    out = Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    if request.choices is not None:
        index, lenient = match_choice(text, request.choices)
        if index is None:
            out.fallback = "choice_unmatched"
        else:
            out.text, out.choice_index = request.choices[index], index
            out.fallback = "choice_parsed" if lenient else None
    elif request.json_schema is not None and not json_matches_schema(text, request.json_schema):
        found = extract_json(text, request.json_schema)
        if found is None:
            out.fallback = "json_invalid"
        else:
            out.text, out.fallback = found, "json_extracted"
    return out


def tool_calls_text(calls: Any) -> str:
    """An answer's ``message.tool_calls`` (API objects or dicts) as ``<tool_call>`` blocks."""
    plain_calls = []
    for call in calls or ():
        function = call.get("function") if isinstance(call, Mapping) else call.function
        if isinstance(function, Mapping):
            name, arguments = function.get("name"), function.get("arguments")
        else:
            name, arguments = function.name, function.arguments
        plain_calls.append({"name": name, "arguments": arguments})
    return render_tool_calls(plain_calls)


def _number(patterns: Sequence[str], text: str) -> int | None:
    for pattern in patterns:
        found = re.search(pattern, text, re.IGNORECASE)
        if found:
            return int(found.group(1))
    return None


def refusal(status: int, message: str, body: Any = None) -> str:
    """The error text of a request the server refused with a 4xx that is not retried: the
    cause first (for a prompt over the model's context, the prompt's token count and the
    model's limit as the server gave them), then the server's own message."""
    text = f"{message} {json.dumps(body, default=str) if body is not None else ''}"
    if _CONTEXT.search(text):
        prompt, limit = _number(_PROMPT, text), _number(_LIMIT, text)
        size = f"{prompt} tokens" if prompt is not None else "a size the server did not say"
        cap = f"{limit} tokens" if limit is not None else "not said"
        return (
            f"HTTP {status}, not retried: the prompt and its reply do not fit the model's "
            f"context (prompt {size}; the model's limit: {cap}). Lower protocol.history_steps "
            "or protocol.max_tokens, or serve the model with a longer context. The server said: "
            f"{message}"
        )
    return (
        f"HTTP {status}, not retried (the server refused the request itself; the same request "
        f"would be refused again). The server said: {message}"
    )


# -- the event loop thread --------------------------------------------------------------------
class _LoopThread:
    """A private asyncio loop on a daemon thread; ``run(coro)`` blocks for its result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="openai")
        self.thread.start()

    def run(self, coro) -> Any:
        future: Future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    def stop(self, cleanup=None) -> None:
        if cleanup is not None and self.loop.is_running():
            try:
                self.run(cleanup)
            except Exception:  # closing must not fail the run
                pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


@dataclass
class _Failure:
    kind: str
    detail: str
    connect: bool = False


def quiet_http_logs() -> None:
    """The HTTP client logs every request at INFO (thousands per run); keep its warnings only,
    unless the user configured those loggers."""
    for name in ("httpx", "httpx2"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


# -- the backbone -------------------------------------------------------------------------------
class OpenAIBackbone(BackboneBase):
    """A chat model behind an OpenAI-compatible HTTP API; see the module docstring."""

    def __init__(
        self,
        model: str,
        name: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        structured: str = "openai",
        strict: bool | str = "auto",
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_tokens_cap: int | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        extra_body: dict[str, Any] | None = None,
        cache_path: str | Path | None = None,
        native_tools: bool = True,
        enable_thinking: bool | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as err:
            raise ConfigError(
                "memarena: this backbone (an OpenAI-compatible server) needs the `openai` "
                'package, which is not installed. Install it with `pip install "openai>=1.40,<4"` '
                "(or `pip install openai`)."
            ) from err
        self._openai = openai
        structured = str(structured).strip().lower()
        if structured not in STRUCTURED_MODES:
            raise ConfigError(
                f"memarena: backbone.structured={structured} is not a mode. Valid choices: "
                f"{', '.join(STRUCTURED_MODES)}."
            )
        if int(concurrency) < 1 or int(max_retries) < 0 or float(timeout) <= 0:
            raise ConfigError(
                f"memarena: backbone.concurrency={concurrency} must be >= 1, max_retries="
                f"{max_retries} >= 0 and timeout={timeout} > 0."
            )
        if strict not in ("auto", True, False, None):
            raise ConfigError(f"memarena: backbone.strict={strict}: use auto, true or false.")
        self.model = str(model)
        self.base_url = str(base_url or OPENAI_URL).rstrip("/")
        self.api_key_env = api_key_env or None
        self.api_key = self._api_key()
        self.structured = structured
        self.strict = strict
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_tokens_cap = int(max_tokens_cap) if max_tokens_cap else None
        self.chat_template_kwargs = plain(chat_template_kwargs or {})
        if enable_thinking is not None:  # Qwen3's template switch on vLLM/SGLang servers; wins
            if self.base_url == OPENAI_URL:
                raise ConfigError(
                    f"memarena: backbone.enable_thinking={enable_thinking} is a chat-template "
                    "switch (Qwen3 on vllm serve); OpenAI's API has none. Set "
                    "backbone.enable_thinking=null."
                )
            self.chat_template_kwargs["enable_thinking"] = bool(enable_thinking)
        self.extra_body = plain(extra_body or {})
        self.native_tools = bool(native_tools)
        cache_model = f"openai:{self.base_url}:{self.model}"
        if self.chat_template_kwargs or self.extra_body:
            extra = json.dumps([self.chat_template_kwargs, self.extra_body], sort_keys=True)
            cache_model += ":" + hashlib.sha256(extra.encode()).hexdigest()[:12]
        super().__init__(
            name=name or self.model.rsplit("/", 1)[-1],
            cache_model=cache_model,
            cache_path=cache_path,
        )
        quiet_http_logs()
        self._loop: _LoopThread | None = None
        self._client: Any = None
        self._lock = threading.Lock()
        self._logged_errors: set[str] = set()

    def no_native_tools(self) -> str:
        return (
            f"memarena: backbone {self.name} got a request with tools, but "
            "backbone.native_tools is false. Set it to true when the server takes `tools` "
            "(vllm serve needs --enable-auto-tool-choice --tool-call-parser <parser>, which "
            "scripts/serve_vllm.sh passes for Qwen models)."
        )

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return DUMMY_KEY
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"memarena: the backbone's API key is read from the environment variable "
                f"{self.api_key_env}, which is not set. Export {self.api_key_env}=<your key>, "
                "or set backbone.api_key_env=null for a local server that needs no key."
            )
        return key

    # -- client -----------------------------------------------------------------------------
    def _make_client(self) -> Any:
        """The async client (created on the loop thread; tests replace this)."""
        return self._openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout,
            max_retries=0,  # retries are ours: one policy for every engine error
        )

    def body(self, request: ChatRequest) -> dict[str, Any]:
        return build_body(
            request,
            model=self.model,
            structured=self.structured,
            strict=self.strict,
            extra_body=self.extra_body,
            chat_template_kwargs=self.chat_template_kwargs,
            max_tokens_cap=self.max_tokens_cap,
        )

    # -- generation -------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        with self._lock:
            if self._loop is None:
                self._loop = _LoopThread()
            results = self._loop.run(self._gather(requests))
        completions: list[Completion] = []
        failures: list[_Failure] = []
        for result in results:
            if isinstance(result, _Failure):
                failures.append(result)
                completions.append(
                    Completion(
                        text="",
                        fallback=REQUEST_FAILED,
                        error=f"{result.kind}: {result.detail[:600]}",
                    )
                )
            else:
                completions.append(result)
        for failure in failures:
            if failure.kind not in self._logged_errors:
                self._logged_errors.add(failure.kind)
                log.warning(
                    "%s: a request to %s failed (%s: %s); it is answered with empty text and "
                    "counted as fallback %r",
                    self.name,
                    self.base_url,
                    failure.kind,
                    failure.detail[:300],
                    REQUEST_FAILED,
                )
        if failures and len(failures) == len(requests) and all(f.connect for f in failures):
            log.error(
                "%s: none of %d requests reached %s (is the server up?); they are answered "
                "with fallback %r",
                self.name,
                len(requests),
                self.base_url,
                REQUEST_FAILED,
            )
        return completions

    async def _gather(self, requests: list[ChatRequest]) -> list[Completion | _Failure]:
        if self._client is None:
            self._client = self._make_client()
        semaphore = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*(self._one(r, semaphore) for r in requests)))

    async def _one(self, request: ChatRequest, semaphore: asyncio.Semaphore):
        body = self.body(request)
        attempt = 0
        while True:
            try:
                async with semaphore:
                    response = await self._client.chat.completions.create(**body)
                return self._completion(request, response)
            except Exception as err:  # noqa: BLE001 - every error is classified below
                retry, failure = self._classify(err)
                if not retry or attempt >= self.max_retries:
                    return failure
                await asyncio.sleep(self._delay(attempt, err))
                attempt += 1

    def _classify(self, err: Exception) -> tuple[bool, _Failure]:
        """(retry?, the failure to report); raises ConfigError for a rejected API key."""
        openai = self._openai
        kind = type(err).__name__
        detail = str(err)
        if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
            where = f"${self.api_key_env}" if self.api_key_env else "no key (api_key_env=null)"
            raise ConfigError(
                f"memarena: {self.base_url} rejected the API key ({where}): {detail[:200]}. "
                "Set the right key in that variable, or backbone.api_key_env=null for a local "
                "server that needs no key."
            ) from err
        if isinstance(err, openai.APITimeoutError | openai.APIConnectionError):
            return True, _Failure(kind, detail, connect=True)
        if isinstance(err, openai.APIStatusError):
            status = err.status_code
            if status in _RETRY_STATUS or status >= 500:
                return True, _Failure(f"{kind}({status})", detail)
            body = getattr(err, "body", None)
            return False, _Failure(f"{kind}({status})", refusal(status, detail, body))
        if isinstance(err, asyncio.TimeoutError | ConnectionError | OSError):
            return True, _Failure(kind, detail, connect=True)
        return False, _Failure(kind, detail)

    def _delay(self, attempt: int, err: Exception) -> float:
        delay = self.backoff_s * (2**attempt)
        response = getattr(err, "response", None)
        headers = getattr(response, "headers", None)
        if headers is not None:
            try:
                delay = max(delay, min(float(headers.get("retry-after", 0) or 0), 60.0))
            except (TypeError, ValueError):
                pass
        return delay

    def _completion(self, request: ChatRequest, response: Any) -> Completion:
        choice = response.choices[0] if response.choices else None
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        reasoning = getattr(message, "reasoning_content", None) or ""
        if reasoning and request.tools:  # a thinking agent's reply (a server's reasoning parser
            # splits it off): kept as a <think> block, as the local engines keep it, so the
            # record holds it and the env parses the rest (what ReMe's summarizer reads)
            text = f"<think>\n{reasoning.strip()}\n</think>\n\n{text}"
        usage = getattr(response, "usage", None)
        return finish(
            request,
            text,
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
            tool_calls_text(getattr(message, "tool_calls", None)),
        )

    # -- cache and shutdown ----------------------------------------------------------------
    def close(self) -> None:
        loop, client = self._loop, self._client
        self._loop, self._client = None, None
        if loop is not None:
            closer = getattr(client, "close", None)
            loop.stop(closer() if closer is not None else None)
        super().close()


def record_attempts(backbone: OpenAIBackbone) -> list[dict[str, Any]]:
    """Every request body ``backbone``'s client sends from now on, one per attempt (retries
    included): how many tries a failing request got (``benchmarks/openai_failures.py``, the
    server tests). Call it before the backbone's first request."""
    sent: list[dict[str, Any]] = []
    make_client = backbone._make_client

    def recording_client() -> Any:
        client = make_client()
        create = client.chat.completions.create

        async def recorded(**body: Any) -> Any:
            sent.append(body)
            return await create(**body)

        client.chat.completions.create = recorded
        return client

    backbone._make_client = recording_client  # type: ignore[method-assign]
    return sent
