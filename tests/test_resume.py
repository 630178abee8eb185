"""A run killed with SIGKILL mid-acquisition or mid-evaluation resumes without rerunning
finished episodes, and (scripted backbone) ends with the metrics of an uninterrupted run: every
key of metrics.json, the memory-cost counters included (they are stored per episode)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, run_py

ARGS = [
    "env=pddl",
    "method=memco",  # acquires with the expert as agent, no LLM
    "backbone=scripted",
    "logger=none",
    "protocol.max_train_tasks=6",
    "protocol.max_eval_tasks=8",
    "protocol.concurrency=2",
]


def _run_killed(results: Path, file: str, after: int) -> subprocess.CompletedProcess:
    """Run the real entry point in a subprocess that SIGKILLs itself right after the
    `after`-th record of `file` was written (a real kill at a known point)."""
    code = textwrap.dedent(
        f"""
        import os, runpy, signal, sys
        from memarena.results import store
        seen = {{"n": 0}}
        original = store.RunStore.append
        def append(self, name, record):
            original(self, name, record)
            if name == {file!r}:
                seen["n"] += 1
                if seen["n"] == {after}:
                    os.kill(os.getpid(), signal.SIGKILL)
        store.RunStore.append = append
        sys.argv = ["run.py"] + {ARGS + [f"paths.results_dir={results}"]!r}
        runpy.run_path({str(ROOT / "run.py")!r}, run_name="__main__")
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _metrics(results: Path) -> dict:
    (path,) = results.rglob("metrics.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("uninterrupted")
    proc = run_py(ARGS + [f"paths.results_dir={out}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return _metrics(out)


@pytest.mark.parametrize(("file", "after"), [("acquisition.jsonl", 3), ("episodes.jsonl", 3)])
def test_sigkill_then_resume_matches_uninterrupted(tmp_path, reference, file, after):
    killed = _run_killed(tmp_path, file, after)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert not list(tmp_path.rglob("metrics.json"))
    (run_dir,) = {p.parent for p in tmp_path.rglob(file)}
    before = (run_dir / file).read_text().splitlines()
    assert len(before) == after

    proc = run_py(ARGS + [f"paths.results_dir={tmp_path}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    after_lines = (run_dir / file).read_text().splitlines()
    assert after_lines[:after] == before  # finished episodes kept, not rerun
    ids = [(r.get("agent"), r["task_id"], r["run"]) for r in map(json.loads, after_lines)]
    assert len(ids) == len(set(ids))
    resumed = _metrics(tmp_path)
    assert resumed["retrieval_calls"] > 0 and resumed["avg_mem_entries"] > 0
    assert resumed == reference
    (info,) = tmp_path.rglob("run_info.json")  # both processes, the killed one unfinished
    runs = json.loads(info.read_text())["invocations"]
    assert [r["finished"] is None for r in runs] == [True, False]
    assert runs[1]["outcome"] == "finished" and runs[1]["git_commit"]
