"""ICL: the benchmark's fixed worked examples in the prompt, and no memory bank.

This is the papers' in-context-learning baseline (MemCo's "ICL", the ``empty`` memory of the
G-Memory / MemCo code): the agent sees the benchmark's own few-shot cases and nothing learnt.
Other methods show the env's default number of those cases (``env.fewshot``, the one case the
papers give every method); ICL shows ``n_shots`` of them (``all``: every case the benchmark
ships, e.g. FEVER's three). Nothing is acquired, retrieved or stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from memarena.core import MemoryMethod
from memarena.core.memory import Capabilities
from memarena.core.settings import MethodSettings
from memarena.core.typecheck import Count


@dataclass(frozen=True)
class ICLSettings(MethodSettings):
    n_shots: Literal["all"] | Count = "all"  # the benchmark's worked examples shown


class ICLMemory(MemoryMethod):
    name = "icl"
    capabilities = Capabilities(learns=False)
    Settings = ICLSettings

    def __init__(self, settings: ICLSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self.benchmark_examples = self.settings.n_shots
