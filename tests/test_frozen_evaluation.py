"""Frozen evaluation leaves the memory exactly as acquisition left it.

For every method with memory: acquisition through the pipeline (the expert acts; the memory LLM
is a schema-filling double, so every LLM-built part of the memory gets content), then the
snapshot's bytes and the memory's state (without its LLM usage counters) are taken, the test
split is evaluated frozen, and both must be unchanged, while the evaluation did retrieve from
the memory (non-empty memory ids). A frozen memory refuses ``observe`` with a message that says
why.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from doubles import use_schema_llm

from conftest import compose_cfg
from memarena.core import MemoryFrozenError
from memarena.pipeline import acquire, build, evaluate
from memarena.pipeline.build import close_parts

METHODS = ("memco", "gmemory", "evograph", "reme")


def _parts(tmp_path, method: str):
    cfg = compose_cfg(
        [
            f"method={method}",
            "env=pddl",
            "backbone=scripted",
            "embedder=minilm",
            "logger=none",
            "protocol.max_train_tasks=8",
            "protocol.max_eval_tasks=4",
            "protocol.step_budget=12",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ]
    )
    use_schema_llm(cfg)
    return build(cfg)


def _content(memory) -> str:
    """The memory's state without its LLM usage counters (retrieval may call the memory LLM,
    e.g. G-Memory's re-ranking; that is cost, not content)."""
    state = memory.state_dict()
    for key in ("token_usage", "fallbacks"):
        state.pop(key, None)
    return json.dumps(state, sort_keys=True)


@pytest.mark.parametrize("method", METHODS)
def test_frozen_evaluation_reads_the_memory_and_changes_nothing(tmp_path, method):
    parts = _parts(tmp_path, method)
    try:
        acquire(parts, parts.policy)
        snapshot = parts.store.memory_dir / "memory.json"
        before_bytes = hashlib.sha256(snapshot.read_bytes()).hexdigest()
        parts.memory.freeze()
        before = _content(parts.memory)
        assert parts.memory.size() > 0  # acquisition wrote something to be read

        records = evaluate(parts)

        assert any(r.memory_ids for r in records), "evaluation never retrieved an entry"
        assert _content(parts.memory) == before
        assert hashlib.sha256(snapshot.read_bytes()).hexdigest() == before_bytes
        trajectory, outcome = records[0].pair()
        with pytest.raises(MemoryFrozenError, match="frozen .*cannot observe"):
            parts.memory.observe(trajectory, outcome)
    finally:
        close_parts(parts)
