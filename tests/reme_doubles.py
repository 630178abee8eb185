"""Doubles for ReMe's dynamic-protocol runs (tests/test_reme_dynamic_protocol.py), named by
``_target_`` in a composed config: an expert that fails every first attempt and acts as the
expert on retries, and a hashing embedder whose vectors depend only on the exact text."""

from __future__ import annotations

import hashlib

import numpy as np

from memarena.agent.policy import ExpertPolicy
from memarena.core.llm_types import Completion


class RetryExpert(ExpertPolicy):
    """The env's expert on a retry (a decision key of phase ``reflect<k>``); on any other
    episode it ends every turn at once (BFCL's ``NEXT``), so the first attempt fails."""

    def _act(self, decision) -> Completion:
        if decision.key.split(":", 1)[0].startswith("reflect"):
            return super()._act(decision)
        return Completion(text="NEXT")


class HashEmbedder:
    """64-d Gaussian vectors seeded by the text's SHA-256: equal texts embed equally, other
    texts near-orthogonally (cosine ~ N(0, 1/64)), in every process."""

    dim = 64

    def __init__(self, name: str = "hash-embedder") -> None:
        self.name = name

    def encode(self, texts):
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            rows.append(np.random.default_rng(seed).normal(size=self.dim))
        return np.asarray(rows, dtype=np.float32)

    def close(self) -> None:
        return None
