"""The hf engine's prompt-prefix KV reuse: the store's rules, identical greedy outputs with and
without reuse, and constrained choices scored on one encoding of the prompt."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch

from memarena.core.llm_types import ChatRequest
from memarena.llm.hf import HFBackbone
from memarena.llm.kv_prefix import PrefixStore

MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"
PINNED = {"device": "cpu", "dtype": "float32"}
CHOICES = ["pick up a", "pick up b", "put a on b", "unstack c from d", "stack b on a"]


def _kv(n: int, fill: float = 0.0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.full((2, n, 4), fill), torch.full((2, n, 4), fill))]


# -- the store ----------------------------------------------------------------------------------
def test_lookup_finds_the_longest_common_prefix_and_leaves_the_last_token():
    store = PrefixStore(capacity=100)
    store.add([1, 2, 3, 4], _kv(4, 1.0))
    store.add([1, 2, 9], _kv(3, 2.0))
    hit = store.lookup([1, 2, 3, 4, 5, 6])
    assert hit.length == 4 and hit.kv[0][0].shape == (2, 4, 4) and hit.kv[0][0][0, 0, 0] == 1.0
    assert store.lookup([1, 2, 9, 7]).length == 3
    assert store.lookup([1, 2, 3, 4]).length == 3  # the prompt's last token is always computed
    assert store.lookup([7, 1, 2]).length == 0 and store.lookup([7, 1, 2]).kv is None
    assert store.match_length([1, 2, 3, 8]) == 3


def test_an_entry_extended_by_a_newer_one_is_dropped_and_capacity_evicts_the_oldest():
    store = PrefixStore(capacity=10)
    store.add([1, 2, 3], _kv(3))
    store.add([1, 2, 3, 4, 5], _kv(5))  # holds the first entry
    assert len(store) == 1 and store.tokens == 5
    store.add([7, 8, 9, 10], _kv(4))
    assert len(store) == 2 and store.tokens == 9
    store.add([5, 6], _kv(2))  # 11 tokens: the least recently used entry goes
    assert store.tokens == 6 and store.match_length([1, 2, 3, 4, 5, 6]) == 0
    assert store.match_length([7, 8, 9, 10, 11]) == 4


def test_capacity_zero_keeps_nothing():
    store = PrefixStore(capacity=0)
    store.add([1, 2, 3], _kv(3))
    assert len(store) == 0 and store.lookup([1, 2, 3, 4]).length == 0


# -- the engine ---------------------------------------------------------------------------------
def _conversation(steps: int, episode: int) -> list[dict]:
    messages = [
        {"role": "system", "content": "You act in a blocks world. Reply with one action."},
        {"role": "user", "content": f"Episode {episode}. Your task: put block a on block b. "
                                    "The table holds blocks a, b, c and d. " * 6},
    ]  # fmt: skip
    for i in range(steps):
        messages.append({"role": "assistant", "content": CHOICES[(i + episode) % 5]})
        messages.append({"role": "user", "content": f"Step {i + 1}: nothing happens. Blocks {i}."})
    return messages


def _play(backbone: HFBackbone) -> list[list[tuple[str, int | None]]]:
    """Three episodes of five growing prompts each, free text and a choice per prompt."""
    outputs = []
    for steps in range(5):
        requests = []
        for episode in range(3):
            messages = _conversation(steps, episode)
            requests.append(ChatRequest(messages=messages, max_tokens=10))
            requests.append(ChatRequest(messages=messages, choices=CHOICES))
        outputs.append([(c.text, c.choice_index) for c in backbone.generate(requests)])
    return outputs


@pytest.fixture(scope="module")
def played():
    runs = {}
    for capacity in (0, 32768):
        backbone = HFBackbone(
            converted_dir=MODELS, batch_size=4, cache_path=None, prefix_cache_tokens=capacity,
            **PINNED,
        )  # fmt: skip
        try:
            runs[capacity] = (_play(backbone), backbone.usage)
        finally:
            backbone.close()
    return runs


def test_greedy_outputs_are_identical_with_and_without_prefix_reuse(played):
    (plain, plain_usage), (reused, reused_usage) = played[0], played[32768]
    assert reused == plain
    assert all(c[1] is not None for step in plain for c in step[1::2])  # the choices were scored
    assert plain_usage.reused_prompt_tokens == 0
    assert plain_usage.engine_prompt_tokens == reused_usage.engine_prompt_tokens > 0
    # later steps reuse the earlier prompts: more than half of all prompt tokens came back
    assert reused_usage.reused_prompt_tokens > 0.5 * reused_usage.engine_prompt_tokens


class _CountTokens:
    """A forward pre-hook counting the tokens each model forward pass computes."""

    def __init__(self, model):
        self.passes: list[int] = []
        self.handle = model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.passes.append(int(ids.shape[1]))


def test_a_choice_encodes_its_prompt_once_and_reuses_the_stored_prefix():
    backbone = HFBackbone(converted_dir=MODELS, batch_size=4, cache_path=None, **PINNED)
    try:
        first = ChatRequest(messages=_conversation(3, 0), choices=CHOICES)
        backbone.generate([first])
        counter = _CountTokens(backbone.model)
        try:
            later = ChatRequest(messages=_conversation(4, 0), choices=CHOICES)
            (answer,) = backbone.generate([later])
        finally:
            counter.handle.remove()
        prompt = len(backbone.encode_prompt(later))
        added = prompt - len(backbone.encode_prompt(first))
        # one prefill of what the new step added, then one token per pass along the choice trie
        assert counter.passes[0] <= added + 1
        assert all(n == 1 for n in counter.passes[1:])
        assert len(counter.passes) <= max(len(backbone.tokenizer(c)["input_ids"]) for c in CHOICES)
        assert sum(counter.passes) < prompt
        assert answer.choice_index is not None
    finally:
        backbone.close()


def test_requests_starting_together_compute_their_shared_prefix_once():
    shared = "Instructions shared by every episode. " * 30
    requests = [
        ChatRequest(messages=[{"role": "user", "content": shared + f"Task {k}: stack {k}."}],
                    choices=CHOICES)  # fmt: skip
        for k in range(3)
    ]
    answers = {}
    for capacity in (0, 32768):
        backbone = HFBackbone(
            converted_dir=MODELS, batch_size=4, cache_path=None, prefix_cache_tokens=capacity,
            **PINNED,
        )  # fmt: skip
        counter = _CountTokens(backbone.model)
        try:
            answers[capacity] = [c.choice_index for c in backbone.generate(requests)]
            prompts = [len(backbone.encode_prompt(r)) for r in requests]
            passes = counter.passes
        finally:
            counter.handle.remove()
            backbone.close()
        if capacity:  # the shared part once, then a batch of the three tails
            assert passes[0] < prompts[0] and passes[1] < prompts[0] - passes[0] + 8
            assert backbone.usage.reused_prompt_tokens > 0
        else:
            assert passes[0] == max(prompts)
    assert answers[0] == answers[32768]


def test_chunked_prefill_of_uneven_rows_matches_each_row_alone(monkeypatch):
    import memarena.llm.hf_decode as hf_decode

    monkeypatch.setattr(hf_decode, "PREFILL_TOKENS", 96)  # many chunks, some of pads only
    requests = [
        ChatRequest(messages=_conversation(4, 1), max_tokens=8),
        ChatRequest(messages=[{"role": "user", "content": "Say hi."}], max_tokens=8),
        ChatRequest(messages=_conversation(1, 2), choices=CHOICES),
    ]
    backbone = HFBackbone(
        converted_dir=MODELS, batch_size=4, cache_path=None, prefix_cache_tokens=0, **PINNED
    )
    try:
        together = [(c.text, c.choice_index) for c in backbone.generate(requests)]
        alone = [(c.text, c.choice_index) for r in requests for c in backbone.generate([r])]
    finally:
        backbone.close()
    assert together == alone
    assert all(text for text, _ in together)


def test_cpu_batches_group_rows_of_similar_length():
    from memarena.llm.hf import _similar_batches

    fresh = [40, 50, 100, 1000, 1100, 1900, 60, 45]
    order = sorted(range(len(fresh)), key=fresh.__getitem__)
    assert _similar_batches(order, fresh, 8, 0.25) == [[0, 7, 1, 6], [2], [3, 4], [5]]
    assert _similar_batches(order, fresh, 3, 0.25) == [[0, 7, 1], [6, 2], [3, 4], [5]]
    assert _similar_batches(order, fresh, 4, None) == [[0, 7, 1, 6], [2, 3, 4, 5]]
