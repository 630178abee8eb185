"""W&B from the start of a run: per-episode metrics during acquisition and evaluation, a run
killed with SIGKILL mid-evaluation keeps its partial metrics in the offline W&B run, and the
resume continues the same W&B run id; everything read back with W&B's own offline reader
(``wandb leet inspect``, via :func:`read_offline_run`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, run_py
from memarena.results.loggers import read_offline_run, run_id_for

TRAIN, EVAL = 4, 6
ARGS = [
    "env=pddl",
    "method=memco",  # acquires with the expert as agent, no LLM
    "backbone=scripted",
    "logger=wandb",
    f"protocol.max_train_tasks={TRAIN}",
    f"protocol.max_eval_tasks={EVAL}",
    "protocol.concurrency=2",
    "logger.flush_interval_s=0.2",
]


pytestmark = pytest.mark.usefixtures("isolated_wandb")


def _run_until(results: Path, after: int, action: str) -> subprocess.CompletedProcess:
    """The real entry point, running ``action`` (Python source) right after the ``after``-th
    evaluation record was written and handed to its listeners (the live metrics)."""
    code = textwrap.dedent(
        f"""
        import os, runpy, signal, sys, time
        from memarena.results import store
        seen = {{"n": 0}}
        original = store.RunStore.append_record
        def append_record(self, name, record):
            original(self, name, record)
            if name == "episodes.jsonl":
                seen["n"] += 1
                if seen["n"] == {after}:
                    {action}
        store.RunStore.append_record = append_record
        sys.argv = ["run.py"] + {ARGS + [f"paths.results_dir={results}"]!r}
        runpy.run_path({str(ROOT / "run.py")!r}, run_name="__main__")
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _run_killed(results: Path, after: int) -> subprocess.CompletedProcess:
    """SIGKILLed after the ``after``-th evaluation record, once W&B had time to flush its log (a
    run killed after a while: what was logged up to W&B's last flush is on disk)."""
    return _run_until(results, after, "time.sleep(2.0); os.kill(os.getpid(), signal.SIGKILL)")


def test_killed_run_keeps_partial_metrics_and_resume_continues_the_same_run(tmp_path):
    killed = _run_killed(tmp_path, after=3)
    assert killed.returncode == -9, killed.stderr[-2000:]
    (run_dir,) = {p.parent for p in tmp_path.rglob("episodes.jsonl")}
    (first,) = (run_dir / "wandb").glob("offline-run-*")
    assert first.name.endswith(run_id_for(run_dir))

    partial = read_offline_run(first)
    assert partial["run"]["id"] == run_id_for(run_dir) and partial["state"] == "running"
    assert partial["config"]["method"]["name"] == "memco"  # the config, logged at the start
    steps = [h["_step"] for h in partial["history"]]
    # one step per record: TRAIN acquisition episodes (1 sample each), then 3 evaluation ones
    assert steps == list(range(1, TRAIN + 3 + 1))
    acq = [h for h in partial["history"] if "acquire/episodes" in h]
    assert [h["acquire/episodes"] for h in acq] == list(range(1, TRAIN + 1))
    evals = [h for h in partial["history"] if "eval/episodes" in h]
    assert [h["eval/episodes"] for h in evals] == [1, 2, 3]
    done = [json.loads(x) for x in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert evals[-1]["eval/success_rate"] == pytest.approx(sum(r["success"] for r in done) / 3)
    assert all(h["memory_size"] > 0 for h in evals)  # MemCo's snapshot holds records
    assert "success_rate" not in partial["summary"]  # no final metrics: the run was killed

    resumed = run_py(ARGS + [f"paths.results_dir={tmp_path}"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    folders = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and folders[0] == first
    assert all(f.name.endswith(run_id_for(run_dir)) for f in folders), "one W&B run id"

    run = read_offline_run(run_dir)  # both invocations, merged as `wandb sync` uploads them
    assert run["files"] == [next(f.glob("*.wandb")) for f in folders]
    assert run["state"] == "finished" and run["exit_code"] == 0
    steps = [h["_step"] for h in run["history"]]
    assert steps == sorted(set(steps)), "the resumed run continues the step counter"
    n_eval = len((run_dir / "episodes.jsonl").read_text().splitlines())  # EVAL x MemCo's views
    evals = [h["eval/episodes"] for h in run["history"] if "eval/episodes" in h]
    assert evals == list(range(1, n_eval + 1))  # 3 before the kill, the rest after
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert run["summary"]["success_rate"] == pytest.approx(metrics["success_rate"])
    assert run["summary"]["memory_size"] == metrics["memory_size"]
    assert run["summary"]["usage/agent/calls"] >= 0  # the cost counters of usage.json
    assert run["history"][-1]["_step"] == TRAIN + n_eval + 1  # the final metrics' step

    # the episode table: one row per evaluated episode, its trajectory as text
    (table,) = folders[1].glob("files/media/table/episodes_*.table.json")
    data = json.loads(table.read_text())
    rows = [dict(zip(data["columns"], row, strict=True)) for row in data["data"]]
    assert len(rows) == metrics["n_episodes"] == n_eval
    assert all(r["trajectory"].startswith("[observation]") and "[1] >" in r["trajectory"]
               for r in rows)

    # the printed command names both folders, and wandb itself accepts it
    out = resumed.stdout + resumed.stderr
    (command,) = set(re.findall(r"upload it with: (wandb sync .*)", out))
    assert command == "wandb sync " + " ".join(str(f) for f in folders)
    dry = subprocess.run(
        [sys.executable, "-m", "wandb", "sync", "--dry-run", *command.split()[2:]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr[-2000:]
    # W&B lists each invocation's file; files of one run id are synced in order into that run
    listed = dry.stdout + dry.stderr
    assert "Would sync 2 run(s)" in listed and all(str(f) in listed for f in run["files"])


def test_run_that_raises_mid_evaluation_finishes_its_wandb_run_as_failed(tmp_path):
    """A crash (an exception, not a kill): the run is closed with exit code 1 and keeps the
    steps logged before it."""
    proc = _run_until(tmp_path, 2, 'raise RuntimeError("the env broke")')
    assert proc.returncode != 0 and "the env broke" in proc.stderr
    (run_dir,) = {p.parent for p in tmp_path.rglob("episodes.jsonl")}
    run = read_offline_run(run_dir)
    assert run["state"] == "failed" and run["exit_code"] == 1
    # both evaluation records were written and logged before the raise; no final metrics
    evals = [h["eval/episodes"] for h in run["history"] if "eval/episodes" in h]
    assert evals == [1, 2] and run["history"][-1]["_step"] == TRAIN + 2
    assert "success_rate" not in run["summary"]
