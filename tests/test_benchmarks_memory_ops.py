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
    assert by["memco"]["tasks"] < 10  # ~14 records per task: a few tasks hold 40 entries
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


def test_memory_ops_every_method_holds_its_size_in_entries():
    methods = [m for m in memory_ops.METHODS if m not in ("none", "icl")]
    rows = memory_ops.run(methods, [200], embedder="fake", n_queries=8, minilm_items=100,
                          echo=False)  # fmt: skip
    assert memory_ops.failed(rows) == []
    for row in rows:
        assert row["check"] == "ok", row
        assert abs(row["entries"] - 200) <= memory_ops.MARGIN * 200, row
    by = {r["method"]: r for r in rows}
    # two executor inserts per solved task (MemSkill writes solved tasks only; 60% are solved)
    assert 100 < by["memskill"]["tasks"] < 200
    assert by["gmemory"]["tasks"] == by["evograph"]["tasks"] == 167  # 167 tasks + 33 insights
    assert by["reme"]["tasks"] < 200  # two distinct experiences per task, none deduplicated


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
