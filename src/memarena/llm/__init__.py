"""LLM backbones behind one interface: ``generate(requests) -> completions``.

- ``HFBackbone`` (``memarena.llm.hf``): transformers, padded batches, constrained choice and
  JSON decoding; runs the embedded SmolLM2-135M offline on a CPU.
- ``ScriptedBackbone`` (``memarena.llm.scripted``): the env's expert with epsilon noise; not an
  LLM (``is_llm = False``).
- ``BackboneBase`` (``memarena.llm.base``): call cache, constraint checks and usage accounting
  shared by every engine; ``CallCache`` (``memarena.llm.cache``): the SQLite call cache.

``HFBackbone`` is imported lazily, so the scripted backbone does not pay for torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarena.llm.base import BackboneBase, check_constraints, json_matches_schema
from memarena.llm.cache import CallCache
from memarena.llm.scripted import ScriptedBackbone

if TYPE_CHECKING:
    from memarena.llm.hf import HFBackbone

__all__ = [
    "BackboneBase",
    "CallCache",
    "HFBackbone",
    "ScriptedBackbone",
    "check_constraints",
    "json_matches_schema",
]


def __getattr__(name: str) -> Any:
    if name == "HFBackbone":
        from memarena.llm.hf import HFBackbone

        return HFBackbone
    raise AttributeError(f"module 'memarena.llm' has no attribute {name!r}")
