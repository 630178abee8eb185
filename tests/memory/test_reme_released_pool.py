"""ReMe's released experience pools (docs/library/paper_data/task/bfcl_qwen3_*.jsonl in
agentscope-ai/ReMe): a file in that format, built here from its schema, becomes a snapshot when
protocol.snapshot_from names it; evaluation retrieves its experiences under their released ids;
every field and the usage counts survive a round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doubles import FakeLLM
from test_reme import _query, _reme

from conftest import compose_cfg
from memarena.core import ConfigError
from memarena.memory.reme.released import read_pool
from memarena.pipeline.build import snapshot_source
from memarena.results.store import snapshot_marker

LINES = [
    ("3bd4929d874a4750b0d4ab78c0246299", "success", "stock price and watchlist",
     "look the symbol up first, then add it to the watchlist", 4, 3),
    ("60a6950ce215419ab8bc6092737779c7", "failure", "starting the car engine",
     "lock every door and press the brake before starting", 0, 0),
    ("9f0c1d2e3a4b5c6d7e8f901234567890", "comparative", "moving a file into a folder",
     "cd into the folder, then move the file by its name", 2, 1),
]  # fmt: skip


def write_pool(path):
    rows = []
    for memory_id, category, when, content, freq, utility in LINES:
        stamp = "2025-09-20 11:22:49"
        rows.append({
            "workspace_id": path.stem, "memory_id": memory_id, "memory_type": "procedural",
            "when_to_use": when, "content": content, "score": 0, "time_created": stamp,
            "time_modified": stamp, "author": "qwen3-8b",
            "metadata": {"author": "qwen3-8b", "task_query": f"please: {when}",
                         "when_to_use": when, "category": category, "created_time": stamp,
                         "modified_time": stamp, "generalized_query": f"generally {when}",
                         "utility": utility, "freq": freq},
        })  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_every_field_and_count_survives_a_round_trip(tmp_path):
    path, rows = write_pool(tmp_path / "bfcl_qwen3_8b.jsonl")
    experiences = read_pool(path)
    assert [e.id for e in experiences] == [line[0] for line in LINES]
    assert [e.kind for e in experiences] == ["success", "failure", "comparative"]
    assert [(e.retrievals, e.utility) for e in experiences] == [(4, 3), (0, 0), (2, 1)]
    assert [e.to_released() for e in experiences] == rows
    memory = _reme(FakeLLM())
    memory.import_released(path)
    memory.save(tmp_path / "snap")
    again = _reme(FakeLLM())
    again.load(tmp_path / "snap")
    assert [e.to_released() for e in again.pool.items.values()] == rows


def test_snapshot_from_a_released_pool_is_evaluated_with_its_ids(tmp_path):
    path, _ = write_pool(tmp_path / "bfcl_qwen3_8b.jsonl")
    cfg = compose_cfg(["method=reme", "env=bfcl", f"paths.cache_dir={tmp_path / 'cache'}",
                       f"protocol.snapshot_from={path}"])  # fmt: skip
    folder = snapshot_source(cfg, str(path), _reme(FakeLLM()))
    marker = snapshot_marker(folder)
    assert marker["released_file"] == str(path) and marker["memory_size"] == 3
    assert marker["env"] == "bfcl"
    assert snapshot_source(cfg, str(path), _reme(FakeLLM())) == folder  # converted once
    memory = _reme(FakeLLM(), top_k=1)
    memory.load(folder)
    memory.begin_phase("eval")
    context = memory.retrieve(_query("start the car, please"))
    assert context.memory_ids == ["60a6950ce215419ab8bc6092737779c7"]
    assert "lock every door and press the brake" in "".join(context.slots.values())


def test_a_file_that_is_not_a_pool_is_refused(tmp_path):
    bad = tmp_path / "pool.jsonl"
    bad.write_text(json.dumps({"memory_id": "x", "content": "c"}) + "\n")
    with pytest.raises(ConfigError, match="lacks \\['when_to_use'\\]"):
        read_pool(bad)


def test_a_missing_released_file_says_where_the_pools_come_from(tmp_path):
    missing = tmp_path / "bfcl_qwen3_8b.jsonl"
    cfg = compose_cfg(["method=reme", "env=bfcl", f"paths.cache_dir={tmp_path / 'cache'}"])
    with pytest.raises(ConfigError, match="no such file.*docs/library/paper_data/task/bfcl_qwen3"):
        snapshot_source(cfg, str(missing), _reme(FakeLLM()))


def test_the_released_pool_experiment_names_the_backbones_file():
    for backbone, stem in (("qwen3_8b", "bfcl_qwen3_8b"), ("qwen3_32b", "bfcl_qwen3_32b")):
        cfg = compose_cfg(["experiment=reme_table1_released_pool", "ablation=reme/released_pool",
                           f"backbone={backbone}", "paths.released_dir=/pools"])  # fmt: skip
        assert cfg.protocol.snapshot_from == f"/pools/{stem}.jsonl"
        assert cfg.protocol.freeze_during_eval is True  # ReMe (fixed): run_bfcl.py's main
    dynamic = compose_cfg(["experiment=reme_table1_released_pool",
                           "ablation=reme/released_pool_dynamic", "paths.released_dir=/pools"])
    assert dynamic.protocol.snapshot_from == "/pools/bfcl_qwen3_8b.jsonl"
    assert dynamic.protocol.freeze_during_eval is False and dynamic.method.addition == "selective"
    assert compose_cfg(["method=reme", "ablation=reme/no_dedup"]).method.dedup == "none"


def test_a_run_on_a_released_pool_shows_its_experiences_under_their_ids(tmp_path):
    """`run.py ablation=reme/released_pool`: no acquisition, the released experiences retrieved
    under their ids and their own text in the first user message the agent got."""
    from conftest import run_py

    cfg = compose_cfg(["method=reme", "env=bfcl", "backbone=scripted",
                       "ablation=reme/released_pool", f"paths.released_dir={tmp_path}"])
    write_pool(Path(cfg.protocol.snapshot_from))
    proc = run_py(["method=reme", "env=bfcl", "backbone=scripted", "ablation=reme/released_pool",
                   f"paths.released_dir={tmp_path}", "protocol.max_eval_tasks=2",
                   "protocol.record_prompts=true", "logger=none",
                   f"paths.cache_dir={tmp_path / 'cache'}",
                   f"paths.results_dir={tmp_path / 'results'}"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = (tmp_path / "results").rglob("metrics.json")
    run = metrics.parent
    assert not (run / "acquisition.jsonl").exists()  # evaluated on the file, nothing acquired
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().split("\n")
                if line]  # fmt: skip
    released = {line[0]: line for line in LINES}
    for episode in episodes:
        assert episode["memory_ids"] and set(episode["memory_ids"]) <= set(released)
        shown = "\n".join(m["content"] for m in episode["trajectory"]["steps"][0]["prompt"])
        for memory_id in episode["memory_ids"]:
            assert released[memory_id][3] in shown  # the experience's own content
    (folder,) = (tmp_path / "cache" / "released_memory" / "reme").iterdir()
    assert snapshot_marker(folder)["released_file"] == cfg.protocol.snapshot_from
