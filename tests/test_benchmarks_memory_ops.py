"""benchmarks/memory_ops.py at tiny sizes: one row per (method, size) with every column, the
memories it times answer queries, every method's memory holds the entries its size names, and a
row whose memory does not is marked failed (no timing is asserted)."""

from __future__ import annotations

import json
import sys

import pytest

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
        assert row["entries"] > 0 and row["tasks"] > 0
        assert row["write total s"] >= 0 and row["load s"] >= 0
    by = {r["method"]: r for r in rows}
    assert by["memco"]["write path"] == "observe" and by["memco"]["vectors"] == "-"
    # ~14 records per task, then one-record top-up tasks: 40 entries from fewer tasks
    assert by["memco"]["tasks"] < 40 and by["memco"]["entries"] == 40
    assert by["memorybank"]["tasks"] == by["memorybank"]["entries"] == 40  # one per task
    assert by["reme"]["write path"] == "observe + synthetic LLM"
    assert by["reme"]["vectors"] == "words"  # 40 items > minilm_items: composed item vectors
    table = memory_ops.table(rows).splitlines()
    assert table[0] == "| " + " | ".join(memory_ops.COLUMNS) + " |"
    assert table[0].startswith("| method | size | entries | check |")  # entries beside size
    assert len(table) == 2 + len(methods)


def test_memory_ops_check_marks_entries_off_the_margin():
    # MARGIN 5% of 1000 = 50 entries either way
    assert memory_ops.check(1000, 1000) == "ok"
    assert memory_ops.check(950, 1000) == memory_ops.check(1050, 1000) == "ok"
    assert memory_ops.check(949, 1000) == "FAILED: holds 949 entries, not 1000 (margin 5%)"
    assert memory_ops.check(377, 10000) == "FAILED: holds 377 entries, not 10000 (margin 5%)"
    assert memory_ops.check(None, 1000) == "-"  # none / icl store nothing


def test_memory_ops_every_method_holds_exactly_its_size_in_entries():
    methods = [m for m in memory_ops.METHODS if m not in ("none", "icl")]
    rows = memory_ops.run(methods, [200], embedder="fake", n_queries=8, minilm_items=100,
                          echo=False)  # fmt: skip
    assert memory_ops.failed(rows) == []
    for row in rows:
        assert row["check"] == "ok" and row["entries"] == 200, row  # exactly, not within 5%
        assert row["hit"] == 1.0, row
    by = {r["method"]: r for r in rows}
    # four executor inserts per solved task (MemSkill writes solved tasks only; 60% are solved)
    assert 50 < by["memskill"]["tasks"] < 120
    # ~167 tasks + ~33 insights, the last tasks without an insight (the top-up)
    assert 160 < by["gmemory"]["tasks"] == by["evograph"]["tasks"] < 175
    assert 100 <= by["reme"]["tasks"] < 110  # two distinct experiences per task, none deduplicated
    assert by["memco"]["tasks"] < 60  # local decision records and the global ones they promote


def test_memory_ops_fill_counts_what_the_published_memory_holds():
    # MemCo's global records appear when acquisition ends: the fill counts them while it fills,
    # so the frozen memory (local + global) holds the size, not the local records alone
    items = memory_ops.ItemEmbedder(memory_ops.FakeEmbedder())
    cfg = memory_ops.method_config("memco")
    memory = memory_ops.build(cfg, items, memory_ops.SyntheticLLM())
    tasks, _ = memory_ops.fill(memory, "memco", 300, memory_ops.task_stream())
    local = sum(len(agent.store) for agent in memory.locals.values())
    assert 0 < local < 300 and memory_ops.entries(memory) == 300
    memory.freeze()
    assert memory.size() == 300 and len(memory.global_memory) == 300 - local


def test_memory_ops_synthetic_items_stay_apart_under_the_dedup():
    # the composed word vectors (sizes above --minilm-items) and the fake embedder: distinct word
    # draws are near-orthogonal, far under ReMe's 0.5 dedup threshold
    rng = __import__("random").Random(0)
    texts = [" ".join(rng.sample(memory_ops.LEXICON, 10)) for _ in range(300)]
    stored = [" ".join(rng.sample(memory_ops.LEXICON, 5)) for _ in range(300)]
    for embedder in (memory_ops.FakeEmbedder(), memory_ops.ItemEmbedder(memory_ops.FakeEmbedder())):
        if isinstance(embedder, memory_ops.ItemEmbedder):
            embedder.words = True
        cos = embedder.encode(texts) @ embedder.encode(stored).T
        assert cos.max() < 0.5, type(embedder).__name__


def test_memory_ops_collapsed_memory_fails_its_row_and_the_exit_status(monkeypatch, capsys):
    # every synthetic answer the same: ReMe's similarity dedup keeps one experience
    monkeypatch.setattr(memory_ops, "LEXICON", ["apple"] * memory_ops.ANSWER_WORDS)
    argv = ["memory_ops.py", "--sizes", "50", "--methods", "none", "reme", "--embedder", "fake",
            "--queries", "4"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        memory_ops.main()
    assert exit_.value.code == 1
    printed = capsys.readouterr().out
    line = next(row for row in printed.splitlines() if row.startswith("| reme | 50 |"))
    entries = int(line.split("|")[3])
    assert entries < 10
    assert f"FAILED: holds {entries} entries, not 50 (margin 5%)" in line
    assert "| tasks |" in printed and f"| {4 * 50 + 8} |" in line  # filling gave up
    assert "1 row(s) FAILED: reme at 50" in printed  # none's row: nothing to check


def test_memory_ops_help_states_the_margin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["memory_ops.py", "--help"])
    with pytest.raises(SystemExit) as exit_:
        memory_ops.main()
    assert exit_.value.code == 0
    assert "more than 5% off its size is marked FAILED" in " ".join(capsys.readouterr().out.split())
