"""A store of prompt KV caches, looked up by longest common token prefix.

The hf engine keeps, after each request, the key/value tensors of its prompt. A later prompt
that starts with the same tokens (the next step of the same conversation, or any episode that
shares the system message and few-shot examples) reuses the longest stored prefix and only
prefills the rest. An entry whose tokens are a prefix of a newer entry is dropped (the newer
one holds it); the store is bounded by ``capacity`` tokens and forgets the least recently used
entries first. ``capacity=0`` turns reuse off.

Keys are stored after the rotary embedding, so a prefix's tensors are valid at the same
positions in any later prompt: reusing them is exact up to floating-point summation order.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values [heads, tokens, dim]


@dataclass
class _Entry:
    tokens: np.ndarray
    kv: KV


@dataclass
class PrefixHit:
    """``length`` tokens of a prompt whose tensors are stored (``kv``: per layer, sliced)."""

    length: int
    kv: KV | None


class PrefixStore:
    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._ids = 0
        self.tokens = 0  # tokens held

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.tokens = 0

    def lookup(self, prompt: list[int]) -> PrefixHit:
        """The longest stored prefix of ``prompt``, leaving at least its last token to compute
        (the next token's logits come from it)."""
        key, length = self._best(prompt)
        if key is None:
            return PrefixHit(0, None)
        self._entries.move_to_end(key)
        kv = [(k[:, :length], v[:, :length]) for k, v in self._entries[key].kv]
        return PrefixHit(length, kv)

    def match_length(self, prompt: list[int]) -> int:
        """How many tokens of ``prompt`` :meth:`lookup` would reuse (nothing is touched)."""
        return self._best(prompt)[1]

    def _best(self, prompt: list[int]) -> tuple[int | None, int]:
        if self.capacity <= 0 or not self._entries or len(prompt) < 2:
            return None, 0
        query = np.asarray(prompt, dtype=np.int64)
        best_key, best = None, 0
        for key, entry in self._entries.items():
            n = min(len(entry.tokens), len(query) - 1)
            if n <= best:
                continue
            same = entry.tokens[:n] == query[:n]
            length = n if same.all() else int(np.argmin(same))
            if length > best:
                best_key, best = key, length
        return best_key, best

    def add(self, prompt: list[int], kv: KV) -> None:
        """Keep ``kv`` (per layer ``[heads, len(prompt), dim]``, owned by the store)."""
        if self.capacity <= 0 or len(prompt) > self.capacity:
            return
        tokens = np.asarray(prompt, dtype=np.int64)
        for key in [k for k, e in self._entries.items() if _is_prefix(e.tokens, tokens)]:
            self._drop(key)
        self._ids += 1
        self._entries[self._ids] = _Entry(tokens, kv)
        self.tokens += len(tokens)
        while self.tokens > self.capacity:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: int) -> None:
        self.tokens -= len(self._entries.pop(key).tokens)


def _is_prefix(short: np.ndarray, long: np.ndarray) -> bool:
    return len(short) <= len(long) and bool((long[: len(short)] == short).all())
