from memarena.results.store import RunStore, run_dir_for


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
