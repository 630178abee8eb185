"""ICL: the benchmark's fixed worked examples in the prompt, and no memory bank.

This is the papers' in-context-learning baseline (MemCo's "ICL", the ``empty`` memory of the
G-Memory / MemCo code): the agent sees the benchmark's own few-shot cases and nothing learnt.
Other methods show the env's default number of those cases (``env.fewshot``, the one case the
papers give every method); ICL shows ``n_shots`` of them (``all``: every case the benchmark
ships, e.g. FEVER's three). Nothing is acquired, retrieved or stored.
"""

from __future__ import annotations

from memarena.core import ConfigError, MemoryMethod


class ICLMemory(MemoryMethod):
    name = "icl"
    learns = False

    def __init__(self, n_shots: int | str = "all", **kwargs) -> None:
        super().__init__(**kwargs)
        if n_shots != "all" and (not isinstance(n_shots, int) or n_shots < 0):
            raise ConfigError(f"memarena: method.n_shots={n_shots!r} must be 'all' or an int >= 0.")
        self.benchmark_examples = n_shots
