"""Per-row constraints, decoding and limits of the hf engine's padded batches.

A row's constraint is a token trie over the tokenized ``choices`` (:class:`ChoiceTrie`: the
output is always exactly one choice; the row stops as soon as its node leaves a single choice)
or a JSON-schema grammar compiled by llguidance (:class:`JsonState`, compact: no whitespace
between tokens; the row stops as soon as its value is complete). :class:`BatchController` masks
each row's logits by its own constraint, and :func:`sample` draws from a generator seeded by the
request's own seed, so a sample does not depend on what else is in the batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import LogitsProcessor

from memarena.core.llm_types import ChatRequest


def compact_json(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` for llguidance with compact JSON: no whitespace between tokens (llguidance
    allows any amount by default, and a small model can spend its whole reply budget on
    newlines). A schema that sets its own ``x-guidance`` options keeps them."""
    if "x-guidance" in schema:
        return schema
    return {**schema, "x-guidance": {"whitespace_flexible": False}}


class ChoiceTrie:
    """Token trie over the tokenized choices of one request; ``end`` closes a choice."""

    def __init__(self, sequences: list[list[int]], end: int) -> None:
        self.end = end
        self.children: list[dict[int, int]] = [{}]
        self.terminal: list[int | None] = [None]  # index of the choice ending at a node
        self.members: list[set[int]] = [set()]  # distinct choices below a node
        self.lengths: dict[int, int] = {}
        seen: set[tuple[int, ...]] = set()
        for index, seq in enumerate(sequences):
            if tuple(seq) in seen:  # a duplicate choice string: the first index wins
                continue
            seen.add(tuple(seq))
            self.lengths[index] = len(seq)
            node = 0
            self.members[0].add(index)
            for token in seq:
                child = self.children[node].get(token)
                if child is None:
                    child = len(self.children)
                    self.children[node][token] = child
                    self.children.append({})
                    self.terminal.append(None)
                    self.members.append(set())
                node = child
                self.members[node].add(index)
            self.terminal[node] = index
        self._allowed: dict[tuple[int, str], torch.Tensor] = {}

    def determined(self, node: int) -> int | None:
        """The choice a node commits to, when only one is left below it."""
        return next(iter(self.members[node])) if len(self.members[node]) == 1 else None

    def allowed(self, node: int, device: torch.device) -> torch.Tensor:
        key = (node, str(device))
        if key not in self._allowed:
            ids = list(self.children[node])
            if self.terminal[node] is not None:
                ids.append(self.end)
            self._allowed[key] = torch.tensor(ids, dtype=torch.long, device=device)
        return self._allowed[key]


class ChoiceState:
    def __init__(self, trie: ChoiceTrie) -> None:
        self.trie = trie
        self.node = 0
        self.result: int | None = trie.determined(0)

    def mask(self, device: torch.device) -> torch.Tensor:
        return self.trie.allowed(self.node, device)

    def consume(self, token: int) -> bool:
        """Advance on a generated token; True when the choice is settled."""
        if token == self.trie.end:
            self.result = self.trie.terminal[self.node]
            return True
        child = self.trie.children[self.node].get(token)
        if child is None:  # cannot happen under the mask
            return True
        self.node = child
        self.result = self.trie.determined(child)
        return self.result is not None


class JsonState:
    def __init__(self, matcher: Any, eos_ids: set[int]) -> None:
        self.matcher = matcher
        self.eos_ids = eos_ids

    def mask(self, device: torch.device) -> torch.Tensor:
        bias = np.frombuffer(self.matcher.compute_logit_bias(), dtype=np.uint8)
        return torch.from_numpy(bias > 0).to(device)

    def consume(self, token: int) -> bool:
        if token in self.eos_ids:
            return True
        ok = self.matcher.consume_token(token)
        return not ok or self.matcher.is_stopped()


@dataclass
class Row:
    request: ChatRequest
    max_tokens: int
    constraint: ChoiceState | JsonState | None = None
    generator: torch.Generator | None = None
    tokens: list[int] = field(default_factory=list)
    done: bool = False
    stop_window: int = 0  # tokens to decode when looking for stop strings


class BatchController(LogitsProcessor):
    """Per-row masks and sampling (as a logits processor) and per-row stopping."""

    def __init__(self, rows: list[Row], eos_ids: set[int], tokenizer) -> None:
        self.rows = rows
        self.eos_ids = eos_ids
        self.tokenizer = tokenizer

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for b, row in enumerate(self.rows):
            temperature = row.request.temperature
            if row.done or (row.constraint is None and temperature <= 0):
                continue  # plain greedy: the argmax in generate does it
            s = scores[b]
            if row.constraint is not None:
                allowed = row.constraint.mask(s.device)
                masked = torch.full_like(s, float("-inf"))
                if allowed.dtype == torch.bool:
                    n = min(allowed.numel(), s.numel())
                    masked[:n] = torch.where(allowed[:n], s[:n], masked[:n])
                else:
                    masked[allowed] = s[allowed]
                s = masked
            if temperature > 0:
                token = sample(s, temperature, row.request.top_p, row.generator)
                s = torch.full_like(s, float("-inf"))
                s[token] = 0.0
            scores[b] = s
        return scores

    def after_token(self, input_ids: torch.LongTensor) -> torch.BoolTensor:
        last = input_ids[:, -1].tolist()
        for b, row in enumerate(self.rows):
            if row.done:
                continue
            token = last[b]
            row.tokens.append(token)
            if row.constraint is not None:
                row.done = row.constraint.consume(token)
            elif token in self.eos_ids:
                row.done = True
            if not row.done and len(row.tokens) >= row.max_tokens:
                row.done = True
            if not row.done and row.stop_window:
                tail = self.tokenizer.decode(row.tokens[-row.stop_window :])
                row.done = any(stop in tail for stop in row.request.stop or ())
        return torch.tensor([row.done for row in self.rows], device=input_ids.device)


def sample(scores: torch.Tensor, temperature: float, top_p: float, generator) -> int:
    probs = torch.softmax(scores.float().cpu() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(descending=True)
        keep = (sorted_p.cumsum(0) - sorted_p) < top_p  # the top token is always kept
        probs = torch.zeros_like(probs)
        probs[order[keep]] = sorted_p[keep]
    return int(torch.multinomial(probs, 1, generator=generator))
