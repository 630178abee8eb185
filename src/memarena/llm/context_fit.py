"""What an engine that tokenizes its own prompts (hf, vllm) does with a prompt that does not
fit the context beside its reply cap: ``backbone.prompt_overflow``.

- ``shorten_reply`` (default): the prompt is sent whole and the reply cap is lowered to the
  room the context has left, as a vLLM server serves a request without ``max_tokens`` (ReMe's
  released BFCL agent sends none); counted as ``reply_shortened`` on the completion. A
  constrained choice is never shortened (it would be cut), and a prompt that leaves no room
  is refused;
- ``refuse``: the request is refused whenever prompt + reply cap exceed the context, as a
  vLLM server refuses a request with a fixed ``max_tokens`` (gorilla's Qwen3 handler sends
  16384);
- ``cut_left``: the prompt's first tokens are cut until it fits beside the full reply cap
  (memarena before issue 49): the system message, tools, memory and task go first. Counted as
  ``prompt_truncated`` on the completion; the run is flagged.

A refused request is answered with empty text and fallback ``prompt_too_long`` (its error
gives both sizes): the agent's episode ends with status ``prompt_too_long`` (a failure, never
retried as an error), a memory method counts it as a malformed answer. ``metrics.json`` counts
the agent's ``prompt_truncated`` and ``reply_shortened`` requests and ``prompt_too_long``
episodes, and flags the run with ``prompt_truncated`` / ``prompt_too_long`` when there are any.

The OpenAI-compatible engine holds no tokenizer and never cuts a prompt: the server decides
(a vLLM server refuses prompt + ``max_tokens`` over ``max_model_len``; llama.cpp's refuses a
prompt over ``n_ctx``), and its refusal ends the episode with status ``error`` naming both
sizes (:func:`memarena.llm.openai_engine.refusal`: counted in ``n_errors``, flagged ``errors``,
the run stopped past ``protocol.max_error_rate``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memarena.core.errors import ConfigError
from memarena.core.llm_types import PROMPT_TOO_LONG, Completion

PROMPT_OVERFLOWS = ("shorten_reply", "refuse", "cut_left")
REPLY_SHORTENED = "reply_shortened"
PROMPT_TRUNCATED = "prompt_truncated"


def check_overflow(value: str) -> str:
    """``value`` when it is one of :data:`PROMPT_OVERFLOWS`, else a ConfigError naming the key."""
    if value not in PROMPT_OVERFLOWS:
        raise ConfigError(
            f"memarena: backbone.prompt_overflow={value!r} is not valid; valid: "
            f"{list(PROMPT_OVERFLOWS)} (shorten_reply: the prompt whole, the reply cap lowered "
            "to the room left; refuse: the request fails as prompt_too_long; cut_left: the "
            "prompt's head is cut)."
        )
    return value


def overflow_identity(overflow: str) -> str:
    """What ``overflow`` adds to an engine's cache identity: nothing for the default, so the
    completions of a prompt fitted another way are never replayed for it."""
    return "" if overflow == PROMPT_OVERFLOWS[0] else f":overflow-{overflow}"


@dataclass(frozen=True)
class Fit:
    """A prompt fitted into the context: the ids to send (None: refused), the reply cap to
    decode with, and what was done (None, :data:`REPLY_SHORTENED`, :data:`PROMPT_TRUNCATED`
    or ``prompt_too_long``)."""

    ids: list[int] | None
    max_tokens: int
    event: str | None = None
    prompt_tokens: int = 0  # the whole prompt's length, before any cut

    @property
    def refused(self) -> bool:
        return self.ids is None


def fit_prompt(
    ids: list[int],
    max_tokens: int,
    context: int | None,
    overflow: str,
    *,
    shortenable: bool = True,
) -> Fit:
    """Fit ``ids`` and a reply of ``max_tokens`` into ``context`` tokens by ``overflow`` (see
    the module docstring); ``shortenable``: the reply cap may be lowered (False for a choice)."""
    size = len(ids)
    if not context or size + max_tokens <= context:
        return Fit(ids, max_tokens, None, size)
    if overflow == "cut_left":
        return Fit(ids[-max(1, context - max_tokens) :], max_tokens, PROMPT_TRUNCATED, size)
    if overflow == "shorten_reply" and shortenable and size < context:
        return Fit(ids, context - size, REPLY_SHORTENED, size)
    return Fit(None, max_tokens, PROMPT_TOO_LONG, size)


def refusal(fit: Fit, context: int, model: str) -> Completion:
    """The completion of a refused request: empty text, fallback ``prompt_too_long``."""
    return Completion(
        text="",
        fallback=PROMPT_TOO_LONG,
        error=(
            f"prompt_too_long: {model}'s prompt of {fit.prompt_tokens} tokens and a reply of "
            f"{fit.max_tokens} do not fit its context of {context} tokens; the prompt was not "
            "sent (backbone.prompt_overflow). Lower protocol.history_steps or the reply cap, or "
            "raise backbone.max_model_len."
        ),
    )
