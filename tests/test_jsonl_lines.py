"""JSONL records are read as they were written (issue 50 item 3): ``json.dumps(...,
ensure_ascii=False)`` leaves U+2028, U+2029 and U+0085 raw inside strings, and
``str.splitlines()`` splits on them; every JSONL reader splits on ``\\n`` only
(:mod:`memarena.core.jsonl`)."""

from __future__ import annotations

import json

from memarena.core.jsonl import lines, numbered_lines, read_jsonl
from memarena.envs.fever.partition import read_claims, read_reference_partition
from memarena.envs.hotpotqa.loader import read_hotpotqa
from memarena.memory.reme.released import read_pool
from memarena.pipeline.demo_summary import summary_text
from memarena.results.collect import read_episodes
from memarena.results.records import EpisodeRecord
from memarena.results.store import RunStore

ODD = "a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg\x1dh\x1ei"  # every separator splitlines() knows


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def test_the_helper_splits_at_newline_only():
    text = json.dumps({"t": ODD}, ensure_ascii=False) + "\n\n" + '{"t": 2}\r\n'
    assert len(text.splitlines()) > 3  # what the readers did
    assert [n for n, _ in numbered_lines(text)] == [1, 3]
    assert [json.loads(x)["t"] for _, x in numbered_lines(text)] == [ODD, 2]
    assert lines(b"a\nb") == [b"a", b"b"] and lines(b"a\nb", keepends=True) == [b"a\n", b"b"]
    assert lines("a\n", keepends=True) == ["a\n"] and lines("") == []


def test_fever_claims_and_memco_partition_with_separators_round_trip(tmp_path):
    claim = {"id": 7, "label": "SUPPORTS", "claim": f"A {ODD} film.",
             "evidence": [[[1, 2, "A", 0]]]}  # fmt: skip
    (got,) = read_claims(_write(tmp_path / "claims.jsonl", [claim]))
    assert got["claim"] == claim["claim"]
    for name in ("fever_ab_train_A_v3.jsonl", "fever_ab_train_B_v3.jsonl",
                 "fever_ab_test_v3.jsonl"):  # fmt: skip
        _write(tmp_path / name, [{"id": len(name), "ab_domain": "A_film_tv", "claim": ODD}])
    ref = read_reference_partition(tmp_path)
    assert {v["split"] for v in ref.values()} == {"train", "test"}


def test_hotpotqa_jsonl_with_separators_round_trips(tmp_path):
    record = {
        "_id": "q1", "question": f"Where {ODD}?", "answer": ODD, "type": "bridge",
        "level": "easy", "supporting_facts": [["T", 0]], "context": [["T", [f"x {ODD}."]]],
    }  # fmt: skip
    (got,) = read_hotpotqa(_write(tmp_path / "hotpot.jsonl", [record]))
    assert got["question"] == record["question"] and got["answer"] == ODD


def test_reme_released_pool_with_separators_is_read(tmp_path):
    from memarena.memory.reme.released import REQUIRED

    record = {k: f"{k} {ODD}" for k in REQUIRED}
    (exp,) = read_pool(_write(tmp_path / "pool.jsonl", [record]))
    assert exp.id == record["memory_id"]


def test_a_runs_records_with_separators_are_read_back_by_store_collect_and_summary(tmp_path):
    store = RunStore(tmp_path)
    record = EpisodeRecord(
        task_id=f"claim {ODD}", split="test", domain="d", run=0, success=True, progress=1.0,
        steps=1, status="finished", error=f"said {ODD}", memory_ids=[f"m{ODD}"],
        memory_cost={"calls": 1, "entries": 2},
    )  # fmt: skip
    store.append_record("episodes.jsonl", record)
    store.append_record("episodes.jsonl", record)
    assert [r.task_id for r in store.read_records("episodes.jsonl")] == [record.task_id] * 2
    assert [r.error for r in read_episodes(tmp_path)] == [record.error] * 2
    assert len(read_jsonl(tmp_path / "episodes.jsonl")) == 2
    (tmp_path / "metrics.json").write_text(json.dumps(
        {"method": "m", "env": "fever", "backbone": "scripted", "seed": 0, "success_rate": 1.0,
         "progress_rate": 1.0, "n_episodes": 2}))  # fmt: skip
    text = summary_text(tmp_path, embedded=False)
    assert "fever" in text
