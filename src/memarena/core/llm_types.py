"""Request/completion types exchanged with LLM backbones."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import Any

# {"role": "system"|"user"|"assistant"|"tool", "content": "..."}; an assistant message may carry
# "tool_calls": [{"id": "call_3_0", "type": "function", "function": {"name": ..., "arguments":
# {...}}}] (arguments as a dict, as chat templates expect); a tool message answers one call:
# {"role": "tool", "tool_call_id": "call_3_0", "name": <function>, "content": <result text>}.
# ``memarena.core.tool_calls`` builds and converts them.
Message = dict[str, Any]


# the fallback of a request that got no answer (server down, timeouts after the retries)
REQUEST_FAILED = "request_failed"
# the fallback of a request whose prompt does not fit the model's context (not sent, or refused
# by the server); the agent's episode ends with this status (memarena.llm.context_fit)
PROMPT_TOO_LONG = "prompt_too_long"


@dataclass
class ChatRequest:
    """One chat request inside a batch.

    Constraints (at most one of them):
    - ``choices``: the completion must be exactly one of these strings;
    - ``json_schema``: the completion must be a JSON document matching this schema.

    ``tools``: OpenAI-style function tools (``[{"type": "function", "function": {"name",
    "description", "parameters": <JSON schema>}}]``) offered natively: through the chat
    template's ``tools`` (hf, vLLM) or the API's ``tools`` (openai). Only backbones with
    ``native_tools`` take them. The completion stays text: each call the model makes is one
    ``<tool_call>`` block in ``Completion.text`` (``memarena.core.tool_calls.parse_tool_calls``).

    ``seed`` makes sampling reproducible and is part of the cache key, so two samples of the
    same prompt at temperature > 0 (ReMe's N=8) are different cache entries. Every field is
    part of the cache key: a request holds nothing but what the model is asked.
    """

    messages: list[Message]
    choices: list[str] | None = None
    json_schema: dict[str, Any] | None = None
    stop: list[str] | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 128
    seed: int = 0
    tools: list[dict[str, Any]] | None = None  # last: positional constructions keep working

    def __post_init__(self) -> None:
        if self.choices is not None and self.json_schema is not None:
            raise ValueError("ChatRequest: give either choices or json_schema, not both")
        if self.choices is not None and len(self.choices) == 0:
            raise ValueError("ChatRequest: choices is an empty list; pass None for free text")
        if self.tools is not None and len(self.tools) == 0:
            raise ValueError("ChatRequest: tools is an empty list; pass None for no tools")

    def cache_key(self, model: str) -> str:
        """Stable key of (model, request) for the persistent call cache."""
        body = asdict(self)
        if body["tools"] is None:  # requests without tools keep the keys they had before tools
            del body["tools"]
        blob = json.dumps({"model": model, "request": body}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def stable_seed(*parts: object) -> int:
    """A 32-bit seed that depends only on ``parts`` (their ``str``), the same in every process."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little")


def seeded_for_run(request: ChatRequest, run_seed: int) -> ChatRequest:
    """``request`` with a seed derived from the run's seed and the request itself, when it
    samples (temperature > 0); unchanged when it is greedy.

    The seed is a function of (``run_seed``, the request as the method built it: messages,
    constraints, sampling parameters and the method's own ``seed``, which tells apart several
    samples of one prompt). So two run seeds draw different samples, the same run seed draws
    the same ones in every process (a resumed run and a cache replay give identical results),
    and greedy requests keep their cache keys whatever the run seed (their answer does not
    depend on it)."""
    if request.temperature <= 0:
        return request
    return replace(request, seed=stable_seed("run", int(run_seed), request.cache_key("")))


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    # index into request.choices when the request was a constrained choice
    choice_index: int | None = None
    # set when the backbone could not honour a constraint and fell back (counted in usage);
    # REQUEST_FAILED: the request never got an answer (``error`` says why; never cached)
    fallback: str | None = None
    error: str | None = None
    # how the prompt was fitted into the context when it did not fit beside the reply cap:
    # "reply_shortened" (sent whole, the cap lowered) or "prompt_truncated" (its head cut)
    prompt_fit: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
