"""The model interfaces: an LLM :class:`Backbone` and a sentence :class:`Embedder`.

Both are structural (any object with these members fits), so engines and test doubles need no
common base class. A backbone is a pure LLM: the agent's decision-maker is a policy
(``memarena.agent.policy``) over a backbone, or the env's expert; backbones and the call cache
know nothing about experts. The benchmark contract is in :mod:`memarena.core.env`, the memory
contract in :mod:`memarena.core.memory`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from memarena.core.llm_types import ChatRequest, Completion
from memarena.core.types import Usage


@runtime_checkable
class Backbone(Protocol):
    """An LLM answering a batch of chat requests (one batched engine call)."""

    name: str
    usage: Usage

    def generate(self, requests: list[ChatRequest]) -> list[Completion]: ...

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> Any:
        """A float32 array of shape (len(texts), dim)."""
        ...

    def close(self) -> None:
        """Release the model (a process-wide shared copy is freed with its last user)."""
        ...
