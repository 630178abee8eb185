"""The hf engine's decoding loop: one padded batch, stored prompt prefixes reused.

Each row of a batch is laid out in the KV cache as ``[pad][reused prefix][pad][new tokens]``:
the reused part comes from the :class:`~memarena.llm.kv_prefix.PrefixStore` (left-aligned to
a common column), the rest of the prompt is prefilled in one forward pass, right-aligned so that
every row's last prompt token is the last column. The attention mask hides the padding and the
position ids continue each row's own positions, so a row's tokens see exactly what they would
see alone. After the prefill every row's prompt tensors go back to the store; then one token
per row per forward pass until every row is done. The per-row controller (constraints,
sampling, stop rules) decides each token, as a logits processor does inside ``generate``.

Constrained choices go through the same loop: the prompt is encoded once (its prefix mostly
reused from the previous step) and the choice trie is walked on that cache, one token per
pass, never re-encoding the prompt per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from memarena.llm.int4_decode import Int4Decoder
from memarena.llm.kv_prefix import PrefixStore

PREFILL_TOKENS = 1024  # prompt tokens per prefill pass, over all rows (chunked prefill)


class RowController(Protocol):
    def __call__(self, input_ids: Any, scores: torch.Tensor) -> torch.Tensor: ...

    def after_token(self, input_ids: torch.Tensor) -> torch.Tensor: ...


@dataclass
class PrefillStats:
    prompt_tokens: int = 0  # prompt tokens of the rows
    reused_tokens: int = 0  # of which came from the prefix store


def supports_reuse(model: Any) -> bool:
    """Prefix reuse needs a plain full-attention KV cache in every layer (no sliding windows,
    no recurrent or linear-attention layers)."""
    config = model.config.get_text_config(decoder=True)
    kinds = getattr(config, "layer_types", None) or ["full_attention"]
    if any(kind != "full_attention" for kind in kinds):
        return False
    cache = DynamicCache(config=model.config)
    return all(type(layer) is DynamicLayer for layer in cache.layers)


def shared_prefixes(prompts: list[list[int]], store: PrefixStore, minimum: int = 32) -> list:
    """Prefixes that two or more of ``prompts`` share, at least ``minimum`` tokens longer than
    what the store already holds for them (several episodes starting together share the
    system message and few-shot examples). Computed once and stored before the batch, the
    rows then reuse them instead of each computing its own copy. A prefix of another chosen
    prefix is left out (the longer one holds it)."""
    if store.capacity <= 0 or len(prompts) < 2:
        return []
    order = sorted(range(len(prompts)), key=prompts.__getitem__)
    found: list[list[int]] = []
    for a, b in zip(order, order[1:], strict=False):
        first, second = prompts[a], prompts[b]
        limit = min(len(first), len(second)) - 1
        n = next((i for i in range(limit) if first[i] != second[i]), max(limit, 0))
        held = max(store.match_length(first), store.match_length(second))
        if n - held >= minimum:
            found.append(first[:n])
    found.sort(key=len, reverse=True)
    kept: list[list[int]] = []
    for prefix in found:
        if not any(k[: len(prefix)] == prefix for k in kept):
            kept.append(prefix)
    return kept


def decode_batch(
    model: Any,
    prompts: list[list[int]],
    controller: RowController | None,
    store: PrefixStore,
    *,
    pad_id: int,
    max_new_tokens: int,
    decoder: Int4Decoder | None = None,
) -> PrefillStats:
    """Prefill ``prompts`` (reusing stored prefixes), then decode until the controller says
    every row is done or ``max_new_tokens`` tokens were made (none: a prefill that only fills
    the store). With a ``decoder``, the tokens after the first come from its 4-bit forward
    (:mod:`memarena.llm.int4_decode`); the prompt is always prefilled by ``model``."""
    device = model.device
    rows = len(prompts)
    hits = [store.lookup(p) for p in prompts]
    reused = [h.length for h in hits]
    width_old = max(reused)
    fresh = [p[r:] for p, r in zip(prompts, reused, strict=True)]
    width_new = max(len(f) for f in fresh)

    capacity = width_old + width_new + max(0, max_new_tokens)
    cache = _reused_cache(model, hits, width_old, rows, capacity)
    mask = torch.zeros((rows, width_old + width_new), dtype=torch.long)
    ids = torch.full((rows, width_new), pad_id, dtype=torch.long)
    pos = torch.zeros((rows, width_new), dtype=torch.long)
    for b, (r, new) in enumerate(zip(reused, fresh, strict=True)):
        mask[b, width_old - r : width_old] = 1
        mask[b, width_old + width_new - len(new) :] = 1
        ids[b, width_new - len(new) :] = torch.tensor(new, dtype=torch.long)
        pos[b, width_new - len(new) :] = torch.arange(r, r + len(new))
    mask = mask.to(device)
    ids, pos = ids.to(device), pos.to(device)
    # chunked prefill: a pass's attention scores stay small however long the prompts are
    chunk = max(16, PREFILL_TOKENS // rows)
    with torch.inference_mode():
        for start in range(0, width_new, chunk):
            end = min(width_new, start + chunk)
            out = model(
                input_ids=ids[:, start:end],
                attention_mask=mask[:, : width_old + end],
                position_ids=pos[:, start:end],
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        if store.capacity > 0:
            _store_prompts(store, out.cache, prompts, reused, fresh, width_old)
        if controller is None or max_new_tokens <= 0:
            return PrefillStats(sum(len(p) for p in prompts), sum(reused))
        logits = out.logits[:, -1, :]
        lengths = torch.tensor([len(p) for p in prompts], dtype=torch.long, device=device)
        for made in range(max_new_tokens):
            scores = controller(None, logits.float())
            tokens = scores.argmax(dim=-1, keepdim=True)
            done = controller.after_token(tokens)
            if bool(done.all()) or made + 1 >= max_new_tokens:
                break
            mask = torch.cat([mask, mask.new_ones((rows, 1))], dim=1)
            if decoder is not None:
                logits = decoder.step(tokens[:, 0], lengths, out.cache.layers, mask)
            else:
                out = model(
                    input_ids=tokens,
                    attention_mask=mask,
                    position_ids=lengths[:, None],
                    cache=out.cache,
                    use_cache=True,
                )
                logits = out.logits[:, -1, :]
            lengths = lengths + 1
    return PrefillStats(sum(len(p) for p in prompts), sum(reused))


class _BufferLayer(DynamicLayer):
    """A cache layer over a buffer allocated once per batch with room for the prompt and every
    token to come: each forward pass writes its keys and values in place (a plain
    ``DynamicLayer`` concatenates, copying the whole cache at every decoded token)."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self._keys: torch.Tensor | None = None
        self._values: torch.Tensor | None = None
        self._length = 0

    def allocate(self, rows: int, like_keys: torch.Tensor, like_values: torch.Tensor) -> None:
        heads, dim = like_keys.shape[-3], like_keys.shape[-1]
        self._keys = like_keys.new_zeros((rows, heads, self.capacity, dim))
        self._values = like_values.new_zeros((rows, heads, self.capacity, like_values.shape[-1]))
        self.device = like_keys.device
        self.is_initialized = True

    def place(self, row: int, keys: torch.Tensor, values: torch.Tensor, end: int) -> None:
        """Row ``row``'s reused prefix (``[heads, n, dim]``), ending at column ``end``."""
        self._keys[row, :, end - keys.shape[-2] : end] = keys
        self._values[row, :, end - values.shape[-2] : end] = values

    def advance(self, length: int) -> None:
        self._length = length
        self.keys = self._keys[:, :, :length]
        self.values = self._values[:, :, :length]

    def update(self, key_states, value_states, *args, **kwargs):
        if self._keys is None:
            self.allocate(key_states.shape[0], key_states, value_states)
        end = self._length + key_states.shape[-2]
        if end > self.capacity:  # never expected (the batch sized it): grow rather than fail
            old_keys, old_values = self._keys, self._values
            self.capacity = max(end, 2 * self.capacity)
            self.allocate(old_keys.shape[0], old_keys, old_values)
            self._keys[:, :, : self._length] = old_keys[:, :, : self._length]
            self._values[:, :, : self._length] = old_values[:, :, : self._length]
        self._keys[:, :, self._length : end] = key_states
        self._values[:, :, self._length : end] = value_states
        self.advance(end)
        return self.keys, self.values


def _reused_cache(model: Any, hits: list, width: int, rows: int, capacity: int) -> DynamicCache:
    """A cache of preallocated layers holding each row's reused prefix, right-aligned at
    column ``width``."""
    cache = DynamicCache(config=model.config)
    cache.layers = [_BufferLayer(capacity) for _ in cache.layers]
    if width == 0:
        return cache
    ref = next(h.kv for h in hits if h.kv is not None)
    for layer, buffer in enumerate(cache.layers):
        buffer.allocate(rows, *ref[layer])
        for b, hit in enumerate(hits):
            if hit.length:
                buffer.place(b, *hit.kv[layer], end=width)
        buffer.advance(width)
    return cache


def _store_prompts(store, cache, prompts, reused, fresh, width_old) -> None:
    """Each row's prompt tensors (its reused part and its prefilled part), compacted."""
    total = cache.layers[0].keys.shape[-2]
    for b, prompt in enumerate(prompts):
        old = slice(width_old - reused[b], width_old)
        new = slice(total - len(fresh[b]), total)
        kv = [
            (
                torch.cat([layer.keys[b, :, old], layer.keys[b, :, new]], dim=1),
                torch.cat([layer.values[b, :, old], layer.values[b, :, new]], dim=1),
            )
            for layer in cache.layers
        ]
        store.add(prompt, kv)
