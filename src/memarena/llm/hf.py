"""HFBackbone: a transformers causal LM answering padded batches of chat requests.

One padded forward pass per token serves a whole batch of mixed requests
(:mod:`memarena.llm.hf_decode`). Prompt KV tensors are kept and reused by longest common token
prefix (:mod:`memarena.llm.kv_prefix`): an agent's next step only prefills what its
conversation added, and episodes share the system message and few-shot prefix
(``prefix_cache_tokens`` bounds what is kept; 0 turns reuse off; greedy outputs are the same
either way). A per-row controller gives each row its own:

- constraint (:mod:`memarena.llm.hf_constraints`): a token trie over the tokenized ``choices``
  (the output is always exactly one choice; a row stops as soon as its trie node leaves a
  single choice), or a JSON-schema grammar compiled by llguidance (optional dependency;
  without it the output is unconstrained and checked afterwards);
- decoding: greedy at temperature 0, else temperature/top-p sampling from a generator seeded
  by the request's own seed, so a sample does not depend on what else is in the batch;
- limits: ``max_tokens`` and stop strings; a prompt that does not fit the model's context
  beside its reply cap is handled by ``prompt_overflow`` (:mod:`memarena.llm.context_fit`: by
  default sent whole with the cap lowered to the room left, refused when there is none).

Loading (:mod:`memarena.llm.hf_loading`): ``model`` is a local folder, a hub id, or
``embedded:smollm2-135m``; a GGUF is converted once to safetensors under ``converted_dir``, and
a loaded model is shared by every backbone of the process; ``close()`` gives the backbone's
reference back, and the model is freed when the last backbone using it closes.

Device, dtype and threads follow ``memarena.core.runtime`` (``resolve_device``,
``resolve_dtype``, ``set_cpu_threads``). CPU defaults: float32 (bfloat16 is faster on CPUs with
native bf16 but makes a tiny model's greedy text depend on batch padding) and half the cores.

Decoding on a CPU: ``decode_weights: int4`` (the embedded preset's setting) runs every token
after a reply's first through :mod:`memarena.llm.int4_decode` (the same model with 4-bit
weights; ~3x fewer ms per token than the float32 forward, batch and prefix-reuse drift stated
there); ``float`` (the default) decodes with the transformers forward. JSON constraints are
compact (no whitespace between tokens) and a JSON row stops as soon as its value is complete.

Tools: a request with ``tools`` is templated with them (``native_tools``: the model's template
renders tools, or ``tools_template`` is set, e.g. ``hermes`` for SmolLM2; see
:mod:`memarena.llm.tool_templates`); the model's ``<tool_call>`` blocks come back as text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from memarena.core import runtime
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest, Completion
from memarena.llm.base import BackboneBase, json_matches_schema, plain
from memarena.llm.context_fit import (
    Fit,
    check_overflow,
    fit_prompt,
    overflow_identity,
    refusal,
)
from memarena.llm.hf_constraints import (
    BatchController,
    ChoiceState,
    ChoiceTrie,
    JsonState,
    Row,
    compact_json,
)
from memarena.llm.hf_decode import decode_batch, shared_prefixes, supports_reuse
from memarena.llm.hf_loading import converted_folder, load_model, model_key, resolve_source
from memarena.llm.int4_decode import Int4Decoder, store_name
from memarena.llm.int4_decode import unsupported as int4_unsupported
from memarena.llm.kv_prefix import PrefixStore
from memarena.llm.tool_templates import (
    load_tools_template,
    no_native_tools,
    renders_tools,
    template_args,
)

log = logging.getLogger(__name__)

DECODE_WEIGHTS = ("float", "int4")


def _similar_batches(
    order: list[int], fresh: list[int], size: int, spread: float | None
) -> list[list[int]]:
    """``order`` (by ascending tokens to compute) cut into batches of at most ``size``; with a
    ``spread``, a batch's longest row computes at most that fraction (plus 32 tokens) more
    than its shortest (on a CPU padding costs as much as real tokens and a padded batch saves
    nothing on prefill)."""
    batches: list[list[int]] = []
    for i in order:
        last = batches[-1] if batches else None
        if last and len(last) < size and _similar(fresh[i], fresh[last[0]], spread):
            last.append(i)
        else:
            batches.append([i])
    return batches


def _similar(longer: int, shorter: int, spread: float | None) -> bool:
    return spread is None or longer <= (1 + spread) * shorter + 32


# -- the backbone -------------------------------------------------------------------------------
class HFBackbone(BackboneBase):
    """A transformers causal LM with a chat template; see the module docstring."""

    def __init__(
        self,
        model: str = "embedded:smollm2-135m",
        gguf_file: str | None = None,
        name: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        max_new_tokens: int = 512,
        cache_path: str | Path | None = None,
        converted_dir: str | Path | None = None,
        num_threads: int | str | None = "auto",
        chat_template: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        trust_remote_code: bool = False,
        prefix_cache_tokens: int = 32768,
        enable_thinking: bool | None = None,
        tools_template: str | None = None,
        decode_weights: str = "float",
        prompt_overflow: str = "shorten_reply",
    ) -> None:
        self.prompt_overflow = check_overflow(prompt_overflow)
        if int(batch_size) < 1 or int(max_new_tokens) < 1:
            raise ConfigError(
                f"memarena: backbone.batch_size={batch_size} and backbone.max_new_tokens="
                f"{max_new_tokens} must both be >= 1."
            )
        self.device = runtime.resolve_device(device, prefix="backbone")
        runtime.set_cpu_threads(num_threads, self.device, prefix="backbone")
        self.dtype = runtime.resolve_dtype(dtype, self.device, prefix="backbone")
        self.source = resolve_source(str(model), gguf_file)
        self.batch_size = int(batch_size)
        self.max_new_tokens = int(max_new_tokens)
        self.chat_template_kwargs = plain(chat_template_kwargs or {})
        if enable_thinking is not None:  # Qwen3's template switch, as the vllm engine's; wins
            self.chat_template_kwargs["enable_thinking"] = bool(enable_thinking)
        self.prefix_cache_tokens = max(0, int(prefix_cache_tokens))
        self.decode_weights = str(decode_weights)
        if self.decode_weights not in DECODE_WEIGHTS:
            raise ConfigError(
                f"memarena: backbone.decode_weights={decode_weights} is not one of "
                f"{', '.join(DECODE_WEIGHTS)} (float: the transformers forward; int4: 4-bit "
                "decode steps on a CPU, memarena.llm.int4_decode)."
            )
        # for requests with tools only (memarena.llm.tool_templates); their cache keys name it
        self.tools_template = load_tools_template(tools_template)
        self.tools_identity = self.tools_template.identity if self.tools_template else ""
        dtype_name = str(self.dtype).removeprefix("torch.")
        cache_model = f"hf:{model}:{self.source.gguf_file or ''}:{dtype_name}"
        if self.decode_weights != "float":  # other decode numerics: other completions
            cache_model += f":decode-{self.decode_weights}"
        if chat_template or self.chat_template_kwargs:
            extra = json.dumps([chat_template, self.chat_template_kwargs], sort_keys=True)
            cache_model += ":" + hashlib.sha256(extra.encode()).hexdigest()[:12]
        cache_model += overflow_identity(self.prompt_overflow)
        super().__init__(
            name=name or Path(str(model)).name.removeprefix("embedded:"),
            cache_model=cache_model,
            cache_path=cache_path,
        )
        self.model_key: tuple | None = None
        try:
            self._attach_model(model, converted_dir, chat_template, trust_remote_code)
        except BaseException:
            self.close()
            raise

    def _attach_model(
        self,
        model: str,
        converted_dir: str | Path | None,
        chat_template: str | None,
        trust_remote_code: bool,
    ) -> None:
        key = model_key(self.source, self.device, self.dtype, converted_dir, trust_remote_code)
        self.model, self.tokenizer = load_model(
            self.source, self.device, self.dtype, converted_dir, trust_remote_code
        )
        self.model_key = key  # from here on, close() gives the reference back
        self.chat_template = chat_template or self.tokenizer.chat_template
        if not self.chat_template:
            raise ConfigError(
                f"memarena: backbone.model={model} has no chat template (a base model?). Use an "
                "instruction-tuned model or set backbone.chat_template to a Jinja template."
            )
        self.native_tools = self.tools_template is not None or renders_tools(self.chat_template)
        self.eos_id = self.tokenizer.eos_token_id
        extra_eos = self.model.generation_config.eos_token_id
        extra_eos = extra_eos if isinstance(extra_eos, list) else [extra_eos]
        self.eos_ids = {t for t in [self.eos_id, *extra_eos] if t is not None}
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else self.eos_id
        self.context_limit = getattr(self.model.config, "max_position_embeddings", None)
        self._ll_tokenizer: Any = None
        self._ll_missing = False
        # prompt KV tensors kept for reuse (prefix_cache_tokens=0: none)
        self.prefixes = PrefixStore(self.prefix_cache_tokens if supports_reuse(self.model) else 0)
        # the packed 4-bit layers are stored beside a converted GGUF's weights
        converted = converted_folder(self.source, converted_dir)
        self._int4_store = converted and converted.with_name(f"{converted.name}.{store_name()}")
        self.decoder = self._int4_decoder() if self.decode_weights == "int4" else None

    def _int4_decoder(self) -> Int4Decoder:
        """The model's 4-bit decode forward, built once per loaded model (shared like it)."""
        reason = int4_unsupported(self.model)
        if reason:
            raise ConfigError(
                f"memarena: backbone.decode_weights=int4 cannot be used here: {reason}. Set "
                "backbone.decode_weights=float."
            )
        decoder = getattr(self.model, "_memarena_int4_decoder", None)
        if decoder is None:
            decoder = Int4Decoder(self.model, store=self._int4_store)
            self.model._memarena_int4_decoder = decoder
        return decoder

    def close(self) -> None:
        """Give the shared model back (freed when no other backbone uses it), then close the
        call cache. Closing twice is harmless; a closed backbone cannot generate."""
        key, self.model_key = self.model_key, None
        self.model = None
        self.decoder = None
        if getattr(self, "prefixes", None) is not None:
            self.prefixes.clear()
        if key is not None:
            runtime.release(key)
        super().close()

    # -- prompts ----------------------------------------------------------------------------
    def no_native_tools(self) -> str:
        return no_native_tools(self.name)

    def encode_prompt(self, request: ChatRequest) -> list[int]:
        """The prompt's token ids: the chat template applied to ``request.messages`` (and
        ``request.tools``, through the tools template when one is set)."""
        args = template_args(
            request, self.chat_template, self.tools_template, self.native_tools, self.name
        )
        text = self.tokenizer.apply_chat_template(
            request.messages,
            tokenize=False,
            add_generation_prompt=True,
            **args,
            **self.chat_template_kwargs,
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _fit(self, request: ChatRequest, row: Row) -> Fit:
        """The prompt fitted into the context beside the row's cap (``prompt_overflow``); the
        row takes the cap it decodes with, and a refused row is done before it starts."""
        fit = fit_prompt(
            self.encode_prompt(request),
            row.max_tokens,
            self.context_limit,
            self.prompt_overflow,
            shortenable=request.choices is None,
        )
        row.max_tokens = fit.max_tokens
        row.done = row.done or fit.refused
        return fit

    # -- generation -------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if self.model is None:
            raise RuntimeError(f"{self.name}: generate on a closed HFBackbone")
        rows = [self._make_row(r) for r in requests]
        fits = [self._fit(r, row) for r, row in zip(requests, rows, strict=True)]
        prompts = [fit.ids or [] for fit in fits]
        # similar lengths still to compute together: less padding (rows never depend on their
        # neighbours); the stored prefix a prompt will reuse is looked up in the same order
        fresh = [len(p) - self.prefixes.match_length(p) for p in prompts]
        order = sorted(range(len(rows)), key=fresh.__getitem__)
        todo = [i for i in order if not rows[i].done]
        shared = shared_prefixes([prompts[i] for i in todo], self.prefixes)
        for start in range(0, len(shared), self.batch_size):
            chunk = shared[start : start + self.batch_size]
            stats = decode_batch(
                self.model, chunk, None, self.prefixes, pad_id=self.pad_id, max_new_tokens=0
            )
            self.usage.reused_prompt_tokens -= stats.prompt_tokens - stats.reused_tokens
        spread = 0.25 if self.device.type == "cpu" else None  # GPUs: padding is cheap
        for chunk in _similar_batches(todo, fresh, self.batch_size, spread):
            self._run_batch([rows[i] for i in chunk], [prompts[i] for i in chunk])
        return [
            refusal(fit, self.context_limit or 0, self.name)
            if fit.refused
            else replace(self._finish(row, len(fit.ids or ())), prompt_fit=fit.event)
            for row, fit in zip(rows, fits, strict=True)
        ]

    def _make_row(self, request: ChatRequest) -> Row:
        max_tokens = max(1, min(int(request.max_tokens), self.max_new_tokens))
        row = Row(request=request, max_tokens=max_tokens)
        if request.choices is not None:
            seqs = [
                self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in request.choices
            ]
            state = ChoiceState(ChoiceTrie(seqs, self.eos_id))
            row.constraint = state
            row.max_tokens = max(len(s) for s in seqs) + 1  # a choice is never cut short
            row.done = state.result is not None  # one distinct choice: nothing to decode
        elif request.json_schema is not None:
            row.constraint = self._json_state(request.json_schema)
        if request.stop and row.constraint is None:
            row.stop_window = 4 * max(len(s) for s in request.stop) + 2
        if request.temperature > 0:
            row.generator = torch.Generator().manual_seed(int(request.seed))
        return row

    def _json_state(self, schema: dict[str, Any]) -> JsonState | None:
        if self._ll_missing:
            return None
        try:
            import llguidance
            import llguidance.hf
        except ImportError:
            self._ll_missing = True
            log.warning(
                "%s: llguidance is not installed: JSON output is not constrained, only "
                "validated (pip install llguidance)",
                self.name,
            )
            return None
        if self._ll_tokenizer is None:
            self._ll_tokenizer = llguidance.hf.from_tokenizer(self.tokenizer, eos_token=self.eos_id)
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(compact_json(plain(schema)))
        except (ValueError, TypeError):
            return None
        matcher = llguidance.LLMatcher(self._ll_tokenizer, grammar, log_level=0)
        if matcher.is_error():
            log.warning(
                "%s: llguidance rejects the JSON schema (%s); output is unconstrained",
                self.name,
                matcher.get_error()[:200],
            )
            return None
        return JsonState(matcher, self.eos_ids)

    def _run_batch(self, rows: list[Row], prompts: list[list[int]]) -> None:
        controller = BatchController(rows, self.eos_ids, self.tokenizer)
        stats = decode_batch(
            self.model,
            prompts,
            controller,
            self.prefixes,
            pad_id=self.pad_id,
            max_new_tokens=max(row.max_tokens for row in rows),
            decoder=self.decoder,
        )
        self.usage.engine_prompt_tokens += stats.prompt_tokens
        self.usage.reused_prompt_tokens += stats.reused_tokens

    def _finish(self, row: Row, prompt_tokens: int) -> Completion:
        request = row.request
        if isinstance(row.constraint, ChoiceState):
            index = row.constraint.result
            if index is None:  # cannot happen under the mask; counted, never raised
                return Completion(
                    text="",
                    prompt_tokens=prompt_tokens,
                    completion_tokens=len(row.tokens),
                    fallback="choice_invalid",
                )
            trie = row.constraint.trie
            return Completion(
                text=request.choices[index],
                prompt_tokens=prompt_tokens,
                completion_tokens=trie.lengths[index] + 1,  # the choice and its end token
                choice_index=index,
            )
        tokens = row.tokens
        if tokens and tokens[-1] in self.eos_ids:
            tokens = tokens[:-1]
        text = self.tokenizer.decode(tokens, skip_special_tokens=True)
        for stop in request.stop if row.stop_window else ():
            cut = text.find(stop)
            if cut >= 0:
                text = text[:cut]
        fallback = None
        if request.json_schema is not None and row.constraint is None:
            ok = json_matches_schema(text, request.json_schema)
            fallback = "json_unconstrained" if ok else "json_invalid"
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(row.tokens),
            fallback=fallback,
        )
