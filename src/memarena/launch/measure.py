"""The measuring run behind ``scripts/estimate.py``: one capped run of a sweep cell with the
scripted expert acting, every request it is asked counted in tokens.

The run is the cell's own pipeline (its protocol, prompt builder, memory method and env, on the
env's stand-in data when the official data are absent), with two measuring devices in place of
the models:

- :class:`CountingExpert` is the agent: the scripted expert (``backbone=scripted``), but each
  request's prompt is counted in tokens as the real prompt builder made it, and each reply (the
  expert's action, what a constrained or non-thinking model sends back) likewise; the counts go
  into the completions, so the episode records carry them as a real model's would. Per step
  index and phase it also keeps the prompt sizes (:data:`STEPS`), from which the estimate
  extends an episode to the step limit.
- :class:`CountingLLM` is the memory method's own LLM: it counts each request's prompt, books
  the request's ``max_tokens`` as its completion (the most a real model could write) and
  answers nothing, so the method falls back where it would parse an answer. Its calls are those
  a method makes with an unhelpful model; a method that calls more when its model answers well
  is undercounted (said beside the table).

Tokens are counted with the embedded SmolLM2 tokenizer (a 49k-entry BPE; read from the packaged
GGUF, no download): messages as ChatML (4 tokens of markup each), tools as their JSON. Qwen's
and OpenAI's tokenizers split English prose into a similar number of pieces, not the same.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from memarena.agent.policy import Decision, ExpertPolicy
from memarena.core import ChatRequest, Completion, Usage

log = logging.getLogger(__name__)

MESSAGE_MARKUP_TOKENS = 4  # <|im_start|>, the role, "\n", <|im_end|> around each message

# {phase: {step index: [prompt tokens of each agent request at that step]}}, filled by
# CountingExpert and read (then cleared) by the estimate around each measuring run
STEPS: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
# {phase: [requests, prompt tokens, completion tokens, largest max_tokens asked]}
CALLS: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from transformers import AutoTokenizer

    from memarena.llm.embedded import resolve_embedded_llm

    folder, gguf = resolve_embedded_llm("embedded:smollm2-135m")
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf)


def count_text(text: str) -> int:
    """Tokens of ``text`` (the embedded SmolLM2 tokenizer, no special tokens)."""
    return len(_tokenizer().encode(text, add_special_tokens=False)) if text else 0


def count_request(request: ChatRequest) -> int:
    """Prompt tokens of a chat request: each message's text plus its markup, tools as JSON."""
    total = 0
    for message in request.messages:
        content = message.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content)
        extra = {k: v for k, v in message.items() if k not in ("role", "content") and v}
        total += count_text(content) + MESSAGE_MARKUP_TOKENS
        if extra:
            total += count_text(json.dumps(extra))
    if request.tools:
        total += count_text(json.dumps(request.tools))
    return total


def reset() -> None:
    """Forget what earlier measuring runs counted."""
    STEPS.clear()
    CALLS.clear()


class CountingExpert(ExpertPolicy):
    """The scripted expert whose completions carry the tokens a model's would (module
    docstring). Its name starts with ``scripted`` like every expert's."""

    def __init__(self, name: str | None = None, **options: Any) -> None:
        super().__init__(name="scripted-counting", **options)

    def decide(self, decisions: Sequence[Decision]) -> list[Completion]:
        out = []
        for decision, completion in zip(decisions, super().decide(decisions), strict=True):
            phase, step = _phase_step(decision.key)
            prompt = count_request(decision.request)
            reply = count_text(completion.text)
            STEPS[phase][step].append(prompt)
            calls = CALLS[phase]
            calls[0] += 1
            calls[1] += prompt
            calls[2] += reply
            calls[3] = max(calls[3], int(decision.request.max_tokens or 0))
            out.append(replace(completion, prompt_tokens=prompt, completion_tokens=reply))
        return out


def _phase_step(key: str) -> tuple[str, int]:
    """``acquire:0:task:3`` -> ("acquire", 3); a helper's key (``...:3:helper``) -> step 3."""
    parts = key.split(":")
    phase = "acquire" if parts[0] == "acquire" else "eval"
    numbers = [int(p) for p in parts[1:] if p.isdigit()]
    return phase, numbers[-1] if numbers else 0


class CountingLLM:
    """The memory method's LLM while measuring: counts, answers nothing (module docstring)."""

    name = "counting-llm"

    def __init__(self) -> None:
        self.usage = Usage()

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        out = []
        for request in requests:
            out.append(
                Completion(
                    text="",
                    prompt_tokens=count_request(request),
                    completion_tokens=int(request.max_tokens or 0),
                )
            )
        self.usage.calls += 1
        self.usage.requests += len(out)
        self.usage.prompt_tokens += sum(c.prompt_tokens for c in out)
        self.usage.completion_tokens += sum(c.completion_tokens for c in out)
        return out

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None
