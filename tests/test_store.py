import os

import pytest

from memarena.core import ConfigError, MemoryMethod
from memarena.core.memory import SNAPSHOT_FILE
from memarena.results.store import CONFIG, EPISODES, RunStore, run_dir_for, verify_snapshot


def test_layout(tmp_path):
    d = run_dir_for(tmp_path, "exp", "pddl", "memco", "local_only", "qwen3-8b", 2)
    assert d == tmp_path / "exp" / "pddl" / "memco+local_only" / "qwen3-8b" / "seed2"
    assert run_dir_for(tmp_path, "e", "pddl", "none", None, "b", 0).name == "seed0"


def test_torn_last_line_is_dropped(tmp_path):
    store = RunStore(tmp_path)
    store.append("x.jsonl", {"a": 1})
    store.append("x.jsonl", {"a": 2})
    with open(tmp_path / "x.jsonl", "a") as fh:
        fh.write('{"a": 3, "b"')  # killed mid-write
    assert store.read("x.jsonl") == [{"a": 1}, {"a": 2}]
    store.append("x.jsonl", {"a": 4})
    assert store.read("x.jsonl") == [{"a": 1}, {"a": 2}, {"a": 4}]


def test_a_corrupt_line_before_the_end_stops_and_deletes_nothing(tmp_path):
    store = RunStore(tmp_path)
    for i in range(4):
        store.append("x.jsonl", {"a": i})
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    lines[1] = '{"a": 1, "b'  # corrupted in place, not cut short by a kill
    text = "\n".join(lines) + "\n"
    (tmp_path / "x.jsonl").write_text(text)
    with pytest.raises(ConfigError, match=r"x.jsonl line 2 is corrupt .*Nothing was deleted"):
        store.read("x.jsonl")
    assert (tmp_path / "x.jsonl").read_text() == text


def test_a_second_holder_of_the_run_lock_is_refused_with_the_holders_name(tmp_path):
    with RunStore(tmp_path).lock():
        with pytest.raises(ConfigError, match=rf"in use by pid {os.getpid()} on "):
            with RunStore(tmp_path).lock():
                pass
    with RunStore(tmp_path).lock():  # released when the holder is done
        pass


def test_a_resume_with_other_result_keys_is_refused_and_keeps_config_yaml(tmp_path):
    store = RunStore(tmp_path)
    store.check_identity({"protocol.step_budget": 30, "method.k": 5}, "step_budget: 30\n")
    store.append(EPISODES, {"task_id": "t"})
    store.check_identity({"protocol.step_budget": 30, "method.k": 5}, "same\n")  # same: fine
    with pytest.raises(ConfigError) as err:
        store.check_identity({"protocol.step_budget": 5, "method.k": 5}, "step_budget: 5\n")
    message = str(err.value)
    assert "protocol.step_budget: 30 in the records, 5 now" in message
    assert "paths.results_dir" in message and "protocol.resume=false" in message
    assert (tmp_path / CONFIG).read_text() == "step_budget: 30\n"


def test_a_snapshot_that_changed_after_it_was_marked_is_refused(tmp_path):
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / SNAPSHOT_FILE).write_text('{"method": "m", "schema_version": 1, "state": {}}')
    RunStore(tmp_path).mark_snapshot_complete({"method": "m"})
    verify_snapshot(folder)
    (folder / SNAPSHOT_FILE).write_text('{"method": "m", "sch')
    with pytest.raises(ConfigError, match=r"memory.json does not match its checksum.*"
                       r"acquisition.jsonl"):
        verify_snapshot(folder)


def test_a_corrupt_memory_json_names_the_file_and_the_fix(tmp_path):
    (tmp_path / SNAPSHOT_FILE).write_text('{"method": "none", "sta')
    with pytest.raises(ConfigError, match=r"memory.json is corrupt .*rebuild it from "
                       r"acquisition.jsonl"):
        MemoryMethod().load(tmp_path)
