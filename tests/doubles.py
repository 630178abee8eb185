"""Test doubles shared by the memory-method tests: a scripted LLM and a deterministic embedder."""

from __future__ import annotations

import numpy as np

from memarena.core.llm_types import Completion
from memarena.core.types import Usage


class FakeLLM:
    """Answers each request with the next scripted text; 10 prompt / 3 completion tokens each."""

    name = "fake-llm"

    def __init__(self, answers: list[str] | None = None, default: str = "{}") -> None:
        self.answers = list(answers or [])
        self.default = default
        self.usage = Usage()
        self.requests: list = []
        self.batches = 0

    def generate(self, requests):
        self.batches += 1
        self.requests.extend(requests)
        out = []
        for _ in requests:
            text = self.answers.pop(0) if self.answers else self.default
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=3))
        return out

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None


class FakeEmbedder:
    """Deterministic: a goal "v:a,b,c" embeds as [a, b, c]; other text hashes to a vector."""

    name = "fake-embedder"
    dim = 3

    def close(self) -> None:
        return None

    def encode(self, texts):
        rows = []
        for text in texts:
            if text.startswith("v:"):
                rows.append([float(x) for x in text[2:].split(",")])
            else:
                rng = np.random.default_rng(sum(map(ord, text)))
                rows.append(rng.normal(size=3))
        return np.asarray(rows, dtype=np.float32)
