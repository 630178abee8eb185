"""Decode steps on a CPU with 4-bit weights: the hf engine's ``decode_weights: int4``.

Decoding one token per row is bound by reading the weights: SmolLM2-135M's dequantized float32
copy is 540 MB per token, so the plain transformers forward spent ~57 ms a token where
llama.cpp, reading the GGUF's 4-bit blocks, spent ~13-26 ms. This module keeps the prompt's
prefill as it is (float32 weights, full speed on long inputs, the KV tensors the prefix store
keeps) and runs every *decode* step through a lean forward of the same model whose linear
layers read 4-bit weights (groups of 32 along the input, a bfloat16 scale and offset per group,
torch's ``_weight_int4pack_mm_for_cpu`` kernel):

- the embedded GGUF's Q4_1 blocks are groups of 32 with a scale and a minimum, so its layers
  come back to the same 16 levels per group (scale and offset rounded to bfloat16); the Q8_0
  output matrix (tied to the embedding) is quantized to 4 bits the same way for decoding;
- activations enter each matmul as bfloat16 and leave as float32; the residual stream, norms,
  rotary embedding and attention over the float32 KV cache stay float32;
- the kernel computes each row on its own, in the same order whatever the other rows
  (tests/llm/test_int4_decode.py checks a row alone against the row in a batch bit for bit);
  attention over a padded batch sums the same terms in another order, so a row's logits alone
  and in a batch differ by float32 rounding only (measured and bounded in that test).

The first token of a reply comes from the prefill's logits (float32 weights), the others from
this forward. Quantizing and packing a model's layers takes ~2 s for SmolLM2 (more on a busy
CPU) on every load: with a ``store`` folder (the hf engine gives one beside the converted
weights) the packed layers are written there once (under the cache-build lock, verified by
their manifest) and read back on later loads; the folder's name holds the torch version and the
CPU's kernel capability, whose packed layout may differ.

Architectures: the Llama family as transformers writes it (``llama``, ``mistral`` without a
sliding window, ``qwen2`` with its q/k/v biases, ``qwen3`` with its q/k norms), SiLU-gated MLP,
full attention. Anything else decodes with the transformers forward (``unsupported`` says why).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from memarena.core.cache_build import CacheInvalid, build_once, verify

log = logging.getLogger(__name__)

GROUP = 32  # weights per scale/offset along the input dimension (the GGUF Q4 block size)
ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3")
PACK_FORMAT = 1  # bump when pack_int4's output changes: stored packs of another format are unused
_PACKS = "packs.safetensors"


def store_name() -> str:
    """The name of a stored-packs folder for this torch build and CPU kernel."""
    capability = torch.backends.cpu.get_cpu_capability()
    return f"int4-g{GROUP}-v{PACK_FORMAT}-torch{torch.__version__}-{capability}"


def unsupported(model: Any) -> str | None:
    """Why ``model`` cannot decode through :class:`Int4Decoder` (None: it can)."""
    if model.device.type != "cpu":
        return f"int4 decoding runs on the CPU (the model is on {model.device})"
    if not hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu"):
        return f"torch {torch.__version__} has no _weight_int4pack_mm_for_cpu kernel"
    config = model.config
    kind = getattr(config, "model_type", "?")
    if kind not in ARCHITECTURES:
        return f"model_type {kind!r} is not one of {', '.join(ARCHITECTURES)}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"hidden_act {config.hidden_act!r} (SiLU only)"
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    windowed = kind == "mistral" and getattr(config, "sliding_window", None)
    if kinds != {"full_attention"} or windowed or getattr(config, "use_sliding_window", False):
        return "sliding-window or other non-full attention layers"
    if getattr(config, "mlp_bias", False):
        return "MLP biases"
    sizes = [config.hidden_size, config.intermediate_size,
             config.num_attention_heads * _head_dim(config)]  # fmt: skip
    if any(size % GROUP for size in sizes):
        return f"a layer input size in {sizes} is not a multiple of {GROUP}"
    return None


def _head_dim(config: Any) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


class Int4Linear:
    """``x @ weight.T + bias`` with ``weight`` [out, in] held as 4 bits per value."""

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        packed: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        """``packed``: ``pack_int4(weight)`` as stored before (it is not computed again)."""
        self.packed, self.scales = packed if packed is not None else pack_int4(weight)
        self.bias = None if bias is None else bias.detach().float().clone()
        self.out_features = weight.shape[0]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` [rows, in] (any float dtype) -> [rows, out] float32."""
        y = self.raw(x).float()
        return y if self.bias is None else y + self.bias

    def raw(self, x: torch.Tensor) -> torch.Tensor:
        """The kernel's bfloat16 output, bias not added."""
        return torch.ops.aten._weight_int4pack_mm_for_cpu(
            x.to(torch.bfloat16), self.packed, GROUP, self.scales
        )


def pack_int4(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Asymmetric 4-bit quantization per group of ``GROUP`` inputs: each group's 16 levels
    span its minimum to maximum (``w = scale * (q - 8) + offset``, ``offset = min + 8 scale``),
    packed for the CPU kernel; scales and offsets as bfloat16 ``[in / GROUP, out, 2]``."""
    w = weight.detach().float()
    out_features, in_features = w.shape
    groups = w.reshape(out_features, in_features // GROUP, GROUP)
    low = groups.amin(-1, keepdim=True)
    scale = (groups.amax(-1, keepdim=True) - low) / 15
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # a constant group
    q = torch.round((groups - low) / scale).clamp_(0, 15).to(torch.int32)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
        q.reshape(out_features, in_features), 1
    )
    offset = low + 8 * scale
    scales = torch.cat([scale, offset], dim=-1).transpose(0, 1).contiguous()
    return packed, scales.to(torch.bfloat16)


@dataclass
class _Layer:
    attn_norm: torch.Tensor
    mlp_norm: torch.Tensor
    qkv: Int4Linear
    out: Int4Linear
    gate_up: Int4Linear
    down: Int4Linear
    q_norm: torch.Tensor | None
    k_norm: torch.Tensor | None


class Int4Decoder:
    """One decode step for a batch of rows, reading and extending the engine's KV buffers."""

    def __init__(self, model: Any, store: str | Path | None = None) -> None:
        """``store``: a folder for the packed layers (read when it holds them, else written)."""
        reason = unsupported(model)
        if reason:
            raise ValueError(f"int4 decoding is not available: {reason}")
        config = model.config
        inner = model.model
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = _head_dim(config)
        self.eps = float(config.rms_norm_eps)
        self.scaling = self.head_dim**-0.5
        self.kv_dtype = model.dtype  # the prefill writes the KV cache in the model's dtype
        self.rotary = inner.rotary_emb
        self.embed = inner.embed_tokens.weight.detach()
        self.final_norm = inner.norm.weight.detach().float()
        stored = _read_packs(store)
        self.layers = [
            self._layer(block, stored, f"layers.{i}") for i, block in enumerate(inner.layers)
        ]
        self.lm_head = Int4Linear(model.lm_head.weight, packed=stored.get("lm_head"))
        self.from_store = bool(stored)
        if store is not None and not stored:
            self._write_packs(Path(store))

    def linears(self) -> dict[str, Int4Linear]:
        """Every 4-bit layer by its name in a store."""
        out = {"lm_head": self.lm_head}
        for i, layer in enumerate(self.layers):
            for part in ("qkv", "out", "gate_up", "down"):
                out[f"layers.{i}.{part}"] = getattr(layer, part)
        return out

    def _write_packs(self, store: Path) -> None:
        from safetensors.torch import save_file

        tensors = {}
        for name, linear in self.linears().items():
            tensors[f"{name}.packed"], tensors[f"{name}.scales"] = linear.packed, linear.scales

        def write(tmp: Path) -> None:
            tmp.mkdir(parents=True)
            save_file(tensors, str(tmp / _PACKS))

        try:
            build_once(store, write, what="the 4-bit decode weights")
        except OSError as err:  # a read-only or full cache: pack on every load
            log.warning("could not store the 4-bit decode weights in %s (%s)", store, err)

    @staticmethod
    def _layer(block: Any, stored: dict[str, tuple], name: str) -> _Layer:
        attn, mlp = block.self_attn, block.mlp
        projections = (attn.q_proj, attn.k_proj, attn.v_proj)
        biases = [p.bias for p in projections]
        bias = None if biases[0] is None else torch.cat([b.detach() for b in biases])
        qkv = torch.cat([p.weight.detach() for p in projections])
        gate_up = torch.cat([mlp.gate_proj.weight.detach(), mlp.up_proj.weight.detach()])
        q_norm = getattr(attn, "q_norm", None)
        k_norm = getattr(attn, "k_norm", None)
        return _Layer(
            attn_norm=block.input_layernorm.weight.detach().float(),
            mlp_norm=block.post_attention_layernorm.weight.detach().float(),
            qkv=Int4Linear(qkv, bias, packed=stored.get(f"{name}.qkv")),
            out=Int4Linear(attn.o_proj.weight, attn.o_proj.bias, stored.get(f"{name}.out")),
            gate_up=Int4Linear(gate_up, packed=stored.get(f"{name}.gate_up")),
            down=Int4Linear(mlp.down_proj.weight, packed=stored.get(f"{name}.down")),
            q_norm=None if q_norm is None else q_norm.weight.detach().float(),
            k_norm=None if k_norm is None else k_norm.weight.detach().float(),
        )

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), weight, self.eps)

    def step(
        self,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        cache_layers: list[Any],
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """Logits [rows, vocab] (float32) for ``tokens`` [rows] at ``positions`` [rows].

        ``cache_layers``: the engine's buffer layers (one per model layer, ``update`` appends
        this step's keys and values and returns the whole cache); ``mask`` [rows, columns]: 1
        where a column of the cache (this step's included) is part of the row."""
        rows = tokens.shape[0]
        heads, kv_heads, dim = self.heads, self.kv_heads, self.head_dim
        x = self.embed[tokens].float()
        cos, sin = self.rotary(x[:, None, :], positions[:, None])
        cos, sin = cos.float(), sin.float()  # [rows, 1, dim]: broadcast over heads
        padded = not bool(mask.all())  # padded rows: the padding columns get no attention
        keep = mask.bool()[:, None, None, :] if padded else None
        rotated = heads + kv_heads  # q and k heads, rotated together
        group = heads // kv_heads
        for layer, buffer in zip(self.layers, cache_layers, strict=True):
            qkv = layer.qkv(self._norm(x, layer.attn_norm)).view(rows, rotated + kv_heads, dim)
            qk, v = qkv[:, :rotated], qkv[:, rotated:]
            if layer.q_norm is not None:
                qk = torch.cat([self._norm(qk[:, :heads], layer.q_norm),
                                self._norm(qk[:, heads:], layer.k_norm)], dim=1)  # fmt: skip
            qk = _rotate(qk, cos, sin).to(self.kv_dtype)
            keys, values = buffer.update(qk[:, heads:, None], v[:, :, None].to(self.kv_dtype))
            # grouped-query attention without repeating the cache: the query heads that share
            # a KV head are that head's "query positions"
            q = qk[:, :heads].reshape(rows, kv_heads, group, dim)
            attended = self._attend(q, keys, values, keep)
            x = x + layer.out(attended.reshape(rows, heads * dim))
            # the MLP's inner activation stays in the kernel's bfloat16
            gate, up = layer.gate_up.raw(self._norm(x, layer.mlp_norm)).chunk(2, dim=-1)
            x = x + layer.down.raw(F.silu(gate) * up)
        return self.lm_head(self._norm(x, self.final_norm))

    def _attend(self, q, keys, values, keep) -> torch.Tensor:
        """Attention of ``q`` [rows, kv heads, group, dim] over the cache, float32 out. A
        bfloat16/float16 cache goes through torch's fused attention kernel (one read of the
        cache at the CPU's bf16 speed); a float32 cache through two matmuls with the softmax
        between (the fused kernel is slower there, measured)."""
        if self.kv_dtype != torch.float32:
            return F.scaled_dot_product_attention(
                q, keys, values, attn_mask=keep, scale=self.scaling
            ).float()
        scores = torch.matmul(q * self.scaling, keys.transpose(-1, -2))
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), values)


def _read_packs(store: str | Path | None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The packed layers stored in ``store`` by name ({} when there are none that verify)."""
    if store is None:
        return {}
    try:
        verify(Path(store))
    except CacheInvalid:
        return {}
    from safetensors.torch import load_file

    tensors = load_file(str(Path(store) / _PACKS))
    names = {key.rsplit(".", 1)[0] for key in tensors}
    return {name: (tensors[f"{name}.packed"], tensors[f"{name}.scales"]) for name in names}


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin
