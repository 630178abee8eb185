"""Record files read back exactly or refused with the file, the line and the fix (issue 36, 8):
a JSON line that is not an object, a corrupt but complete last line, and metrics that do not
depend on the order the records were written in."""

import json
import random

import pytest

from memarena.core import ConfigError
from memarena.results.metrics import compute_metrics
from memarena.results.records import EpisodeRecord
from memarena.results.store import EPISODES, RunStore


def ep(task, run, success, progress, *, agent=None, memory_cost=None):
    out = {"task_id": task, "split": "test", "domain": "d", "run": run, "success": success,
           "progress": progress, "steps": 3, "status": "success" if success else "failure",
           "tokens": 10, "agent": agent}  # fmt: skip
    if memory_cost:
        out["memory_cost"] = memory_cost
    return out


def _write(store: RunStore, name: str, objs) -> None:
    for obj in objs:
        store.append(name, obj)


# --- a JSON line that is not an object ------------------------------------------------------
def test_a_record_that_is_not_an_object_is_a_value_error_not_a_type_error():
    with pytest.raises(ValueError, match=r"not a JSON object but int 123"):
        EpisodeRecord.from_json(123)
    with pytest.raises(ValueError, match=r"not a JSON object but list \[1, 2\]"):
        EpisodeRecord.from_json([1, 2])


@pytest.mark.parametrize("bad", ["123", "[1, 2]", '"text"', "null"])
def test_a_line_that_is_not_an_object_names_the_file_and_the_line(tmp_path, bad):
    store = RunStore(tmp_path)
    _write(store, EPISODES, [ep("a", 0, True, 1.0), ep("b", 0, False, 0.5)])
    path = tmp_path / EPISODES
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    damaged = lines[0] + bad + "\n" + lines[1]
    path.write_text(damaged)
    with pytest.raises(ConfigError) as err:
        store.read_records(EPISODES)
    message = str(err.value)
    assert f"{path} line 2 is corrupt" in message and "not an object" in message
    assert "repair or remove that line" in message and "protocol.resume=false" in message
    assert path.read_text() == damaged  # nothing deleted


def test_read_records_names_the_line_of_an_object_that_is_not_a_record(tmp_path):
    store = RunStore(tmp_path)
    _write(store, EPISODES, [ep("a", 0, True, 1.0), {"task_id": "b"}])
    with pytest.raises(ConfigError, match=rf"{EPISODES} line 2 is not an episode record "
                                          r"\(episode record lacks"):  # fmt: skip
        store.read_records(EPISODES)


# --- the last line: torn (unterminated) vs corrupt (terminated) -----------------------------
def test_a_complete_corrupt_last_line_is_refused_not_cut(tmp_path):
    store = RunStore(tmp_path)
    _write(store, "x.jsonl", [{"a": 1}, {"a": 2}])
    path = tmp_path / "x.jsonl"
    damaged = path.read_text() + '{"a": 3, "b\n'  # newline-terminated: not a killed write
    path.write_text(damaged)
    with pytest.raises(ConfigError) as err:
        store.read("x.jsonl")
    message = str(err.value)
    assert f"{path} line 3 is corrupt" in message
    assert "Nothing was deleted: repair or remove that line" in message
    assert path.read_text() == damaged


def test_a_complete_last_line_that_is_not_an_object_is_refused(tmp_path):
    store = RunStore(tmp_path)
    _write(store, "x.jsonl", [{"a": 1}])
    path = tmp_path / "x.jsonl"
    path.write_text(path.read_text() + "123\n")
    with pytest.raises(ConfigError, match=r"x.jsonl line 2 is corrupt \(a JSON int, not an obj"):
        store.read("x.jsonl")


def test_only_an_unterminated_last_line_is_a_torn_write(tmp_path):
    store = RunStore(tmp_path)
    _write(store, "x.jsonl", [{"a": 1}, {"a": 2}])
    path = tmp_path / "x.jsonl"
    whole = path.read_text()
    path.write_text(whole + '{"a": 3}')  # valid JSON, but its newline was never written
    assert store.read("x.jsonl") == [{"a": 1}, {"a": 2}]
    assert path.read_text() == whole  # cut back to the last complete line


# --- metrics do not depend on the file's order ----------------------------------------------
def _records():
    """10 tasks x 3 runs x 2 agents; progress values whose float sum depends on the order
    (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 in binary floating point) and per-run success rates
    1/10, 2/10, ... whose sum does too; memory usage with float seconds."""
    recs = []
    for agent in ("g1", "g2"):
        for run in range(3):
            for t in range(10):
                cost = {"calls": 1, "usage": {"rerank": {"seconds": 0.1 * (t + 1)}}}
                recs.append(ep(f"t{t}", run, t <= run + (agent == "g2"), 0.1 * ((t * 7) % 10),
                               agent=agent, memory_cost=cost))  # fmt: skip
    return recs


def test_metrics_are_bit_identical_whatever_the_record_order():
    recs = _records()
    fresh = compute_metrics(recs, runs_per_repetition=3)
    # the arithmetic differs with the order of a plain sum, so this test has teeth
    progress = [r["progress"] for r in recs]
    assert any(sum(p) != sum(reversed(p)) for p in (progress, progress[::3]))
    orders = [recs[::-1], sorted(recs, key=lambda r: (r["run"], r["task_id"])[::-1])]
    rng = random.Random(0)
    for _ in range(5):
        shuffled = list(recs)
        rng.shuffle(shuffled)
        orders.append(shuffled)
    for order in orders:
        other = compute_metrics(order, runs_per_repetition=3)
        assert json.dumps(other, sort_keys=True) == json.dumps(fresh, sort_keys=True)


def test_an_extended_run_has_the_metrics_of_a_fresh_one(tmp_path):
    """A fresh run of 3 runs writes the runs of each task together; a run extended from 2 to
    3 runs wrote runs 0-1 first and appends run 2 later (after a superseded copy of one of its
    episodes, from a redone chunk). Same episodes, another file order."""
    recs = _records()
    by_task = sorted(recs, key=lambda r: (r["task_id"], r["run"], r["agent"]))
    first = [r for r in by_task if r["run"] != 2]
    added = [r for r in recs if r["run"] == 2]
    fresh_store, extended_store = RunStore(tmp_path / "fresh"), RunStore(tmp_path / "ext")
    _write(fresh_store, EPISODES, by_task)
    _write(extended_store, EPISODES, [*first, {**added[0], "progress": 0.0}, *added])
    fresh = compute_metrics(fresh_store.read_records(EPISODES), runs_per_repetition=3)
    extended = compute_metrics(extended_store.read_records(EPISODES), runs_per_repetition=3)
    # a plain sum in file order differs in the last bit here, so this test has teeth
    assert sum(r["progress"] for r in by_task) != sum(r["progress"] for r in [*first, *added])
    assert extended.pop("duplicate_records") == 1 and fresh.pop("duplicate_records") == 0
    assert json.dumps(extended, sort_keys=True) == json.dumps(fresh, sort_keys=True)
