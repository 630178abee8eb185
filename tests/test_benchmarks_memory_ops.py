"""benchmarks/memory_ops.py at a tiny size: one row per (method, size) with every column, and
the memories it times answer queries (no timing is asserted)."""

from __future__ import annotations

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import memory_ops  # noqa: E402


def test_memory_ops_rows_columns_and_non_empty_retrieval(tmp_path):
    out = tmp_path / "rows.json"
    methods = ["memco", "memorybank", "reme"]  # no embedder; embedder + synthetic LLM (x2)
    rows = memory_ops.run(methods, [40], embedder="fake", n_queries=16, minilm_items=20,
                          out=out, echo=False)  # fmt: skip
    assert [(r["method"], r["size"]) for r in rows] == [(m, 40) for m in methods]
    assert json.loads(out.read_text()) == rows
    for row in rows:
        assert set(row) == set(memory_ops.COLUMNS)
        assert row["hit"] > 0.5, row  # retrieval returned items: the memory is not empty
        assert row["entries"] > 0
        assert row["write total s"] >= 0 and row["load s"] >= 0
    by = {r["method"]: r for r in rows}
    assert by["memco"]["write path"] == "observe" and by["memco"]["vectors"] == "-"
    assert by["reme"]["write path"] == "observe + synthetic LLM"
    assert by["reme"]["vectors"] == "words"  # 40 items > minilm_items: composed item vectors
    table = memory_ops.table(rows).splitlines()
    assert table[0] == "| " + " | ".join(memory_ops.COLUMNS) + " |"
    assert len(table) == 2 + len(methods)
