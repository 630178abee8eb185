"""The prompt ReMe's BFCL experiments send (``protocol.prompt_layout``, issue 49 item 3): a
scripted ``experiment=reme_table1`` cell records its prompts; under ``reme_bfcl`` (the
experiment's setting, ReMe's released bfcl_agent.py) there is no system message, the first user
message is the raw first request, or the task then the header then ``Experience i :`` blocks
holding the retrieved experiences' own text; the no-memory row sends the raw request alone;
memarena's layout is one key away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from needs import need_module

from conftest import SCHEMA_LLM, run_py
from memarena.agent.prompts import MEMORY_HEADER, TASK_LABEL

CELL = [
    "experiment=reme_table1",
    "backbone=scripted",
    "embedder=minilm",  # the embedded embedder, not the paper's Qwen3-Embedding
    "logger=none",
    "protocol.max_train_tasks=2",
    "protocol.max_eval_tasks=1",
    "protocol.runs=1",
    "protocol.repetitions=1",
    "protocol.step_budget=10",
    "protocol.record_prompts=true",
]


def _cell(tmp_path: Path, method: str, *extra: str) -> Path:
    args = [*CELL, f"method={method}", f"paths.results_dir={tmp_path}", *extra]
    if method == "reme":
        args += ["method.samples=2", "method.max_tokens=48", *SCHEMA_LLM]
    proc = run_py(args, doubles=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = tmp_path.rglob("metrics.json")
    return metrics.parent


def _first_episode(run: Path) -> dict:
    return json.loads((run / "episodes.jsonl").read_text().splitlines()[0])


def _raw_first_request(episode: dict) -> str:
    return next(t for t in episode["trajectory"]["task"]["payload"]["turns"] if t)


def test_reme_cell_sends_the_task_then_the_header_then_the_experiences(tmp_path):
    need_module("bfcl_eval")
    run = _cell(tmp_path, "reme")
    episode = _first_episode(run)
    request = _raw_first_request(episode)
    steps = episode["trajectory"]["steps"]
    first = steps[0]["prompt"]
    assert [m["role"] for m in first] == ["user"]  # no system message at all
    pool = json.loads((run / "memory" / "memory.json").read_text())["state"]["pool"]["items"]
    by_id = {e["id"]: e for e in pool}
    shown = episode["trajectory"]["memory_ids"]
    assert shown, "the scripted cell's memory showed nothing"
    blocks = "\n".join(
        f"Experience {i} :\n When to use: {by_id[x]['when_to_use']}\n"
        f" Content: {by_id[x]['content']}\n"
        for i, x in enumerate(shown, 1)
    )
    assert first[0]["content"] == f"{TASK_LABEL}\n{request}\n\n{MEMORY_HEADER}\n{blocks}"
    assert not request.startswith("User:")
    # the memory span points at the blocks
    (span,) = steps[0]["memory_spans"]
    assert first[0]["content"][span["start"] : span["end"]] == blocks
    # the goal, the retrieval query and what acquisition stored as a task's query: the raw text
    assert episode["trajectory"]["task"]["goal"] == request
    assert all(not e["task_query"].startswith("User:") for e in pool)
    # later user turns are the benchmark's raw messages; the head is never rewritten
    later = steps[-1]["prompt"]
    assert later[0] == first[0]
    users = [m["content"] for m in later[1:] if m["role"] == "user"]
    turns = episode["trajectory"]["task"]["payload"]["turns"]
    assert turns[1] in users  # the second request, as the entry gives it
    assert not any(u.startswith("User:") for u in users)
    identity = json.loads((run / "identity.json").read_text())
    assert json.dumps(identity).count('"protocol.prompt_layout": "reme_bfcl"') == 1


@pytest.mark.parametrize("layout", ["reme_bfcl", "memarena"])
def test_no_memory_row_sends_the_raw_request_and_memarena_is_one_key_away(tmp_path, layout):
    need_module("bfcl_eval")
    extra = [] if layout == "reme_bfcl" else ["protocol.prompt_layout=memarena"]
    run = _cell(tmp_path, "none", *extra)
    episode = _first_episode(run)
    request = _raw_first_request(episode)
    first = episode["trajectory"]["steps"][0]["prompt"]
    if layout == "reme_bfcl":
        assert first == [{"role": "user", "content": request}]
    else:  # memarena's system message (NEXT ends a turn) and its "Your task: User: ..." line
        assert [m["role"] for m in first] == ["system", "user"]
        assert "NEXT" in first[0]["content"]
        assert first[1]["content"].startswith(f"Your task: User: {request}")
        assert episode["trajectory"]["task"]["goal"] == f"User: {request}"


def test_the_released_layout_is_refused_where_it_cannot_show_the_functions():
    from types import SimpleNamespace

    from memarena.core import ConfigError
    from memarena.pipeline.build import check_layout
    from memarena.pipeline.protocol import ProtocolSettings

    with pytest.raises(ConfigError, match="prompt_format=conversation"):
        ProtocolSettings(prompt_layout="reme_bfcl", prompt_format="single")
    with pytest.raises(ConfigError, match="valid"):
        ProtocolSettings(prompt_layout="released")
    released = ProtocolSettings(prompt_layout="reme_bfcl")
    tools = SimpleNamespace(native_tools=True)
    check_layout(released, SimpleNamespace(name="bfcl"), tools)  # fine
    with pytest.raises(ConfigError, match="env=appworld"):
        check_layout(released, SimpleNamespace(name="appworld"), tools)
    with pytest.raises(ConfigError, match="native tools"):
        check_layout(released, SimpleNamespace(name="bfcl"), SimpleNamespace(native_tools=False))
    text = ProtocolSettings(prompt_layout="reme_bfcl", tool_calls="text")
    with pytest.raises(ConfigError, match="native tools"):
        check_layout(text, SimpleNamespace(name="bfcl"), tools)
    check_layout(ProtocolSettings(), SimpleNamespace(name="appworld"), tools)  # memarena: any


def test_the_notebook_lists_the_layout_differences():
    from memarena.reports.reme.prompt_layout import (
        layout_differences,
        layout_differences_markdown,
    )

    table = layout_differences()
    assert list(table.columns) == ["aspect", "reme_bfcl (released)", "memarena"]
    assert {"system message", "a retry's lessons", "task text and retrieval query"} <= set(
        table["aspect"]
    )
    text = layout_differences_markdown()
    assert MEMORY_HEADER in text and "bfcl_agent.py" in text
