"""The hf engine's 4-bit decode steps (``decode_weights: int4``, memarena.llm.int4_decode).

- the kernel computes each row on its own: a row alone and in a batch are equal bit for bit;
- the lean forward is the model's forward: on tiny random Llama, Qwen2 (q/k/v biases) and
  Qwen3 (q/k norms) models whose weights are already on the 4-bit grid, a decode step's logits
  match the transformers forward up to bfloat16 activations;
- the embedded SmolLM2's Q4_1 layers come back to their own values;
- greedy text through the engine is the same alone and in a batch, and the float32 KV drift of
  prefix reuse stays within a measured bound of the logits.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch
import transformers

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.llm import hf_decode
from memarena.llm.hf import HFBackbone
from memarena.llm.int4_decode import GROUP, Int4Decoder, Int4Linear, unsupported
from memarena.llm.kv_prefix import PrefixStore

MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"
PINNED = {"device": "cpu", "dtype": "float32"}


def on_grid(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` moved onto a 4-bit grid of groups of 32 with bfloat16-exact scales/offsets
    (as the embedded GGUF's Q4_1 layers are, up to the bfloat16 rounding)."""
    out, inp = weight.shape
    g = weight.reshape(out, inp // GROUP, GROUP)
    low = g.amin(-1, keepdim=True)
    scale = ((g.amax(-1, keepdim=True) - low) / 15).bfloat16().float()
    offset = (low + 8 * scale).bfloat16().float()
    q = torch.round((g - offset) / scale + 8).clamp(0, 15)
    return ((q - 8) * scale + offset).reshape(out, inp)


def test_int4_rows_alone_equal_rows_in_a_batch_bit_for_bit():
    torch.manual_seed(0)
    layer = Int4Linear(torch.randn(96, 64), bias=torch.randn(96))
    x = torch.randn(9, 64)
    batch = layer(x)
    for i in range(9):
        assert torch.equal(layer(x[i : i + 1])[0], batch[i])
    assert torch.equal(layer(x[:4]), batch[:4])


def test_weights_on_the_grid_come_back_exactly():
    torch.manual_seed(1)
    weight = on_grid(torch.randn(48, 64))
    layer = Int4Linear(weight)
    # rows of the identity read the weight's columns (bfloat16 output: 8 significant bits)
    got = layer(torch.eye(64)).T
    assert torch.allclose(got, weight, rtol=2**-8, atol=1e-6)


TINY = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 32}),
}


def tiny_model(kind: str):
    config_name, model_name, extra = TINY[kind]
    config = getattr(transformers, config_name)(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=False, **extra,
    )  # fmt: skip
    torch.manual_seed(2)
    model = getattr(transformers, model_name)(config).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.copy_(on_grid(module.weight))
    return model


@pytest.mark.parametrize("kind", sorted(TINY))
def test_a_decode_step_matches_the_transformers_forward(kind):
    model = tiny_model(kind)
    assert unsupported(model) is None
    decoder = Int4Decoder(model)
    prompts = [[3, 17, 5, 9, 44, 2, 71], [8, 8, 120, 1]]  # uneven: a padded batch
    store = PrefixStore(0)
    with torch.inference_mode():
        for prompt in prompts:
            full = model(input_ids=torch.tensor([prompt + [11]])).logits[0, -1]
            cache = hf_decode._reused_cache(model, [store.lookup(prompt)], 0, 1, len(prompt) + 4)
            model(input_ids=torch.tensor([prompt]), cache=cache, use_cache=True)
            mask = torch.ones(1, len(prompt) + 1, dtype=torch.long)
            step = decoder.step(torch.tensor([11]), torch.tensor([len(prompt)]),
                                cache.layers, mask)[0]  # fmt: skip
            # bfloat16 activations into the 4-bit matmuls: ~2^-8 relative per layer
            assert torch.allclose(step, full, rtol=0.05, atol=0.05 * full.abs().max())
            assert step.argmax() == full.argmax()


def test_unsupported_models_say_why():
    model = tiny_model("llama")
    model.config.hidden_act = "gelu"
    assert "SiLU" in unsupported(model)
    with pytest.raises(ValueError, match="SiLU"):
        Int4Decoder(model)


# -- the engine on the embedded SmolLM2 --------------------------------------------------------
@pytest.fixture(scope="module")
def int4() -> HFBackbone:
    return HFBackbone(converted_dir=MODELS, batch_size=8, max_new_tokens=64, cache_path=None,
                      decode_weights="int4", **PINNED)  # fmt: skip


def test_the_embedded_q4_layers_come_back_to_their_own_values(int4):
    block = int4.model.model.layers[3]
    weight = block.mlp.down_proj.weight.detach()
    layer = Int4Linear(weight)
    got = layer(torch.eye(weight.shape[1])).T
    # the GGUF's groups already are 16 levels: only the bfloat16 scale/offset/output rounding
    err = (got - weight).abs().max() / weight.abs().max()
    assert err < 2**-7


def stories(n: int, uneven: bool) -> list[ChatRequest]:
    """``n`` prompts, of uneven token lengths (a padded batch) or all of one length."""
    return [ChatRequest([{"role": "user", "content": f"Tell a {'very ' * i if uneven else ''}short "
                          f"story about robot number {i}."}], max_tokens=40)
            for i in range(n)]  # fmt: skip


def test_greedy_text_is_identical_alone_and_in_an_unpadded_batch(int4):
    """With a float32 prefill, without padding and without prefix reuse, every op computes a
    row the same way whatever else is in the batch: the texts are equal, not just close. (A
    bfloat16 prefill is not batch-invariant even then: see the drift test below.)"""
    requests = stories(5, uneven=False)
    assert len({len(int4.encode_prompt(r)) for r in requests}) == 1
    saved, int4.prefixes.capacity = int4.prefixes.capacity, 0  # every prompt computed whole
    try:
        batched = [c.text for c in int4.generate(requests)]
        alone = [int4.generate([r])[0].text for r in requests]
    finally:
        int4.prefixes.capacity = saved
    assert batched == alone and all(len(t) > 40 for t in batched)


def _prefilled(model, prompts: list[list[int]], split: int | None):
    """A decode cache holding ``prompts`` (one padded batch), each row's first ``split``
    tokens computed first and reused (None: computed whole)."""
    store = PrefixStore(100_000 if split else 0)
    if split:
        hf_decode.decode_batch(model, [p[:split] for p in prompts], None, store, pad_id=0,
                               max_new_tokens=0)  # fmt: skip
    hits = [store.lookup(p) for p in prompts]
    width_old = max(h.length for h in hits)
    fresh = [p[h.length :] for p, h in zip(prompts, hits, strict=True)]
    width_new = max(len(f) for f in fresh)
    cache = hf_decode._reused_cache(model, hits, width_old, len(prompts), width_old + width_new + 2)
    mask = torch.zeros(len(prompts), width_old + width_new, dtype=torch.long)
    ids = torch.zeros(len(prompts), width_new, dtype=torch.long)
    pos = torch.zeros(len(prompts), width_new, dtype=torch.long)
    for b, (hit, new) in enumerate(zip(hits, fresh, strict=True)):
        mask[b, width_old - hit.length : width_old] = 1
        mask[b, width_old + width_new - len(new) :] = 1
        ids[b, width_new - len(new) :] = torch.tensor(new)
        pos[b, width_new - len(new) :] = torch.arange(hit.length, hit.length + len(new))
    model(input_ids=ids, attention_mask=mask, position_ids=pos, cache=cache, use_cache=True)
    return cache, torch.cat([mask, mask.new_ones((len(prompts), 1))], dim=1)


def _next_logits(backbone: HFBackbone, prompts, split=None) -> torch.Tensor:
    """The next token's logits after ``prompts`` and one more token, by the backbone's decode
    step: its 4-bit decoder, or the float32 transformers forward."""
    model = backbone.model
    cache, mask = _prefilled(model, prompts, split)
    tokens = torch.full((len(prompts),), 42)
    positions = torch.tensor([len(p) for p in prompts])
    if backbone.decoder is not None:
        return backbone.decoder.step(tokens, positions, cache.layers, mask)
    out = model(input_ids=tokens[:, None], attention_mask=mask, position_ids=positions[:, None],
                cache=cache, use_cache=True)  # fmt: skip
    return out.logits[:, -1]


@pytest.fixture(scope="module")
def float32() -> HFBackbone:
    return HFBackbone(converted_dir=MODELS, batch_size=8, cache_path=None, **PINNED)


@pytest.fixture(scope="module")
def bf16_int4() -> HFBackbone:
    """The embedded preset's engine on a CPU with native bfloat16: bfloat16 prefill and KV
    cache, 4-bit decode steps."""
    return HFBackbone(converted_dir=MODELS, batch_size=8, cache_path=None, device="cpu",
                      dtype="bfloat16", decode_weights="int4")  # fmt: skip


@pytest.mark.parametrize(
    ("engine", "bound"), [("int4", 1.0), ("bf16_int4", 2.0), ("float32", 1e-3)]
)
def test_padding_and_prefix_reuse_move_the_logits_within_the_stated_bound(engine, bound, request):
    """A padded batch (attention sums over other columns) and a reused prefix (its KV computed
    in another piece) change a row's float32 sums in the last bits. The 4-bit kernel rounds
    its outputs to bfloat16 (8 significant bits), which turns such a last-bit change into a
    visible one; a bfloat16 prefill (the embedded preset on a CPU with native bf16) rounds
    every layer so. Measured on SmolLM2 over 12 prompts (logits of magnitude ~20), largest
    logit difference for padding / reuse and next-token argmax agreement:

    - float32 prefill, int4 decode: 0.38 / 0.38, 12 and 12 of 12;
    - bfloat16 prefill, int4 decode: 1.06 / 0.75, 11 and 12 of 12;
    - float32 throughout (``dtype: float32``, ``decode_weights: float``): 4.3e-5 / 4.6e-5.

    So the embedded preset's greedy text can part, alone against in a padded batch or with
    against without a reused prefix, where its two best tokens are within ~1 logit; the
    bounds asserted are twice or more the measurements."""
    backbone = request.getfixturevalue(engine)
    prompts = [backbone.encode_prompt(r) for r in stories(12, uneven=True)]
    with torch.inference_mode():
        alone = torch.cat([_next_logits(backbone, [p]) for p in prompts])
        batch = _next_logits(backbone, prompts)
        reused = torch.cat([_next_logits(backbone, [p], split=len(p) // 2) for p in prompts])
    padding_drift = float((alone - batch).abs().max())
    reuse_drift = float((alone - reused).abs().max())
    print(f"{engine}: padding drift {padding_drift:.4g}, reuse drift {reuse_drift:.4g}, argmax "
          f"agreement {(alone.argmax(-1) == batch.argmax(-1)).float().mean():.2f} / "
          f"{(alone.argmax(-1) == reused.argmax(-1)).float().mean():.2f}")
    assert padding_drift < bound and reuse_drift < bound, (padding_drift, reuse_drift)


def test_decode_weights_is_checked_and_names_the_key():
    with pytest.raises(ConfigError, match="backbone.decode_weights=int8"):
        HFBackbone(converted_dir=MODELS, cache_path=None, decode_weights="int8", **PINNED)


def test_int4_completions_are_cached_apart_from_float32(int4):
    plain = HFBackbone(converted_dir=MODELS, cache_path=None, **PINNED)
    try:
        assert int4.cache_model == plain.cache_model + ":decode-int4"
        assert int4.decoder is not None and plain.decoder is None
    finally:
        plain.close()


def test_stored_packs_are_read_back_instead_of_packing_again(tmp_path, monkeypatch):
    """A decoder given a store writes its packed layers there; the next one built on the same
    model reads them (pack_int4 is never called) and decodes bit for bit the same."""
    from memarena.llm import int4_decode

    model = tiny_model("qwen2")
    store = tmp_path / "packs"
    first = Int4Decoder(model, store=store)
    assert not first.from_store and (store / "packs.safetensors").is_file()

    def no_packing(weight):
        raise AssertionError("packed again")

    monkeypatch.setattr(int4_decode, "pack_int4", no_packing)
    second = Int4Decoder(model, store=store)
    assert second.from_store
    ones, twos = first.linears(), second.linears()
    assert sorted(ones) == sorted(twos) and len(ones) == 1 + 4 * 2
    for name, layer in ones.items():
        assert torch.equal(layer.packed, twos[name].packed), name
        assert torch.equal(layer.scales, twos[name].scales), name
    x = torch.randn(3, 64)
    assert torch.equal(first.lm_head(x), second.lm_head(x))
    # a damaged store does not verify: the layers are packed again (and stored again)
    (store / "packs.safetensors").write_bytes(b"0" * 16)
    monkeypatch.undo()
    third = Int4Decoder(model, store=store)
    assert not third.from_store and Int4Decoder(model, store=store).from_store


def test_the_engine_stores_the_packs_beside_the_converted_weights(int4):
    from memarena.llm.int4_decode import store_name

    store = int4._int4_store  # beside this engine's converted copy (MODELS may hold others)
    assert store.parent == MODELS and store.name.endswith(store_name())
    assert (store / "packs.safetensors").is_file()
    assert int4.decoder.linears()["lm_head"].packed.dtype == torch.uint8
