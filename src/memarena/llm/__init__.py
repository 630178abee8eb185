"""LLM backbones behind one interface: ``generate(requests) -> completions``.

- ``HFBackbone`` (``memarena.llm.hf``): transformers, padded batches, constrained choice and
  JSON decoding; runs the embedded SmolLM2-135M offline on a CPU.
- ``OpenAIBackbone`` (``memarena.llm.openai_engine``): any OpenAI-compatible server (OpenAI,
  ``vllm serve``, llama.cpp), concurrent async requests with retries and structured output.
- ``VLLMBackbone`` (``memarena.llm.vllm_engine``): vLLM's offline engine, one batched call per
  step, guided decoding; GPUs, or vLLM's CPU build with the embedded model.
- ``BackboneBase`` (``memarena.llm.base``): call cache, constraint checks and usage accounting
  shared by every engine; ``CallCache`` (``memarena.llm.cache``): the SQLite call cache.

Backbones are pure LLMs: the env's expert with noise (``backbone=scripted``) is a policy,
``memarena.agent.policy.ExpertPolicy``. ``HFBackbone``, ``OpenAIBackbone`` and ``VLLMBackbone``
are imported lazily, so importing this package does not pay for torch, ``openai`` or ``vllm``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarena.llm.base import BackboneBase, check_constraints, json_matches_schema
from memarena.llm.cache import CallCache

if TYPE_CHECKING:
    from memarena.llm.hf import HFBackbone
    from memarena.llm.openai_engine import OpenAIBackbone
    from memarena.llm.vllm_engine import VLLMBackbone

__all__ = [
    "BackboneBase",
    "CallCache",
    "HFBackbone",
    "OpenAIBackbone",
    "VLLMBackbone",
    "check_constraints",
    "json_matches_schema",
]


def __getattr__(name: str) -> Any:
    if name == "HFBackbone":
        from memarena.llm.hf import HFBackbone

        return HFBackbone
    if name == "OpenAIBackbone":
        from memarena.llm.openai_engine import OpenAIBackbone

        return OpenAIBackbone
    if name == "VLLMBackbone":
        from memarena.llm.vllm_engine import VLLMBackbone

        return VLLMBackbone
    raise AttributeError(f"module 'memarena.llm' has no attribute {name!r}")
