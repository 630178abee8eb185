"""A results folder is either right or refuses: the real entry point (run.py in a subprocess)
against the faults a careful user meets. Two runs of one cell at once, a dead LLM server, a
resume with another config, a corrupt line or snapshot, a bad value, a multirun with failed
jobs: each is refused or recovered with one message, and nothing is counted twice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from doubles import first_choice_completion

from conftest import ROOT, run_py
from memarena.llm.local_server import free_port

SCRIPTED = ["env=pddl", "backbone=scripted", "logger=none", "protocol.concurrency=2"]


def _run_dir(results: Path, name: str = "episodes.jsonl") -> Path:
    (path,) = results.rglob(name)
    return path.parent


def _said(proc: subprocess.CompletedProcess) -> str:
    """What a run printed (Hydra's log goes to stdout, the pre-check to stderr), one line."""
    return " ".join(f"{proc.stdout}\n{proc.stderr}".split())


def _records(run_dir: Path, name: str = "episodes.jsonl") -> list[dict]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


# --- 1. two runs of one cell at once ------------------------------------------------------------
def test_a_second_run_of_a_running_cell_fails_naming_the_holder(tmp_path):
    args = [*SCRIPTED, "method=none", "protocol.max_eval_tasks=8", f"paths.results_dir={tmp_path}"]
    go = tmp_path / "go"
    # the first run pauses after its second episode until the test lets it go on
    code = textwrap.dedent(
        f"""
        import os, runpy, sys, time
        from pathlib import Path
        from memarena.results import store
        original, seen = store.RunStore.append, {{"n": 0}}
        def append(self, name, record):
            original(self, name, record)
            seen["n"] += 1
            if seen["n"] == 2:
                while not Path({str(go)!r}).exists():
                    time.sleep(0.05)
        store.RunStore.append = append
        sys.argv = ["run.py"] + {args!r}
        runpy.run_path({str(ROOT / "run.py")!r}, run_name="__main__")
        """
    )
    first = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.rglob("episodes.jsonl")) or len(_records(_run_dir(tmp_path))) < 2:
            assert first.poll() is None and time.monotonic() < deadline, "first run did not start"
            time.sleep(0.1)
        second = run_py(args)
        assert second.returncode == 2
        assert f"is in use by pid {first.pid} on " in _said(second)
        assert "Wait for that run to finish" in _said(second)
    finally:
        go.touch()
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err.decode()[-2000:]
    keys = [(r.get("agent"), r["run"], r["task_id"]) for r in _records(_run_dir(tmp_path))]
    assert len(keys) == len(set(keys)) == 8
    assert json.loads((_run_dir(tmp_path) / "metrics.json").read_text())["duplicate_records"] == 0


# --- 2. a dead LLM server ----------------------------------------------------------------------
class ChatServer:
    """An OpenAI-compatible chat server that answers the first offered choice."""

    def __init__(self, port: int) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                data = json.dumps(first_choice_completion(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _server_args(tmp_path: Path, port: int) -> list[str]:
    return [
        "env=pddl",
        "method=none",
        "backbone=openai_server",
        f"backbone.base_url=http://127.0.0.1:{port}/v1",
        "backbone.max_retries=0",
        "backbone.timeout=5",
        "logger=none",
        "protocol.max_eval_tasks=8",
        "protocol.concurrency=2",
        "protocol.step_budget=3",
        f"paths.results_dir={tmp_path}/results",
        f"paths.cache_dir={tmp_path}/cache",
    ]


def test_a_dead_server_ends_the_run_with_error_episodes_that_a_rerun_retries(tmp_path):
    port = free_port()
    args = _server_args(tmp_path, port)
    dead = run_py(args)
    assert dead.returncode == 2
    assert "answered none of the requests of 3 steps" in _said(dead)
    assert "Connection error" in _said(dead) and "backbone.base_url" in _said(dead)
    run_dir = _run_dir(tmp_path / "results")
    failed = _records(run_dir)
    assert len(failed) == 6 and not (run_dir / "metrics.json").exists()
    for record in failed:
        assert record["status"] == "error" and record["steps"] == 0
        assert record["error"].startswith("LLM request failed: APIConnectionError")

    with ChatServer(port):
        again = run_py(args)
    assert again.returncode == 0, again.stderr[-2000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_episodes"] == 8 and metrics["n_errors"] == 0
    assert metrics["retried_records"] == 6 and metrics["duplicate_records"] == 0
    assert [r["status"] == "error" for r in _records(run_dir)].count(True) == 6  # kept on disk


def test_a_multirun_whose_jobs_fail_exits_non_zero_and_names_them(tmp_path):
    args = [
        "-m",
        *_server_args(tmp_path, free_port()),
        "protocol.max_failed_batches=1",
        "seed=0,1",
        f"paths.log_dir={tmp_path}/logs",
    ]
    proc = run_py(args)
    assert proc.returncode == 1
    said = _said(proc)
    assert "sweep of 2 job(s), 2 failed" in said and "failed job(s) (details in" in said
    assert "#0 " in said and "#1 " in said and "seed=1" in said


# --- 3. a resume with another config ------------------------------------------------------------
def test_a_resume_with_changed_result_keys_is_refused_with_the_difference(tmp_path):
    # a named experiment: an ad-hoc run with other result keys gets another folder (adhoc.py)
    args = [*SCRIPTED, "method=memco", "protocol.max_train_tasks=4", "protocol.max_eval_tasks=4",
            "experiment_name=integrity", f"paths.results_dir={tmp_path}"]  # fmt: skip
    assert run_py(args).returncode == 0
    run_dir = _run_dir(tmp_path)
    config = (run_dir / "config.yaml").read_text()
    changed = run_py([*args, "protocol.step_budget=5", "method.threshold=0.5"])
    assert changed.returncode == 2
    text = _said(changed)
    assert "method.threshold: 0.35 in the records, 0.5 now" in text
    assert "protocol.step_budget: 20 in the records, 5 now" in text  # the demo's budget
    assert "paths.results_dir" in text and "protocol.resume=false" in text
    assert (run_dir / "config.yaml").read_text() == config
    # speed keys are not part of the identity: a resume at another concurrency goes on
    assert run_py([*args, "protocol.concurrency=1"]).returncode == 0
    # and starting over is one switch away
    fresh = run_py([*args, "protocol.step_budget=5", "protocol.resume=false"])
    assert fresh.returncode == 0 and "step_budget: 5" in (run_dir / "config.yaml").read_text()


# --- 5. a corrupt line in the middle of a record file -------------------------------------------
def test_a_corrupt_line_before_the_end_stops_the_run_and_deletes_nothing(tmp_path):
    args = [*SCRIPTED, "method=none", "protocol.max_eval_tasks=6", f"paths.results_dir={tmp_path}"]
    assert run_py(args).returncode == 0
    path = _run_dir(tmp_path) / "episodes.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][: len(lines[1]) // 2] + "\n"  # a damaged record, not a torn last line
    path.write_text("".join(lines))
    before = path.read_bytes()
    proc = run_py(args)
    assert proc.returncode == 2
    assert "episodes.jsonl line 2 is corrupt" in _said(proc)
    assert "Nothing was deleted" in _said(proc)
    assert path.read_bytes() == before


# --- 6. a corrupt snapshot ----------------------------------------------------------------------
def test_a_corrupt_snapshot_is_refused_and_rebuilt_from_the_records(tmp_path):
    # a named experiment: an ad-hoc run with other result keys gets another folder (adhoc.py)
    args = [*SCRIPTED, "method=memco", "protocol.max_train_tasks=4", "protocol.max_eval_tasks=4",
            "experiment_name=integrity", f"paths.results_dir={tmp_path}"]  # fmt: skip
    assert run_py(args).returncode == 0
    run_dir = _run_dir(tmp_path)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    acquired = (run_dir / "acquisition.jsonl").read_text()
    snapshot = run_dir / "memory" / "memory.json"
    snapshot.write_text(snapshot.read_text()[:-40])  # cut short, as a full disk would
    proc = run_py(args)
    assert proc.returncode == 2
    text = _said(proc)
    assert f"{snapshot} does not match its checksum" in text
    assert f"Delete {run_dir / 'memory'} to rebuild it from acquisition.jsonl" in text
    import shutil

    shutil.rmtree(run_dir / "memory")
    rebuilt = run_py(args)
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert (run_dir / "acquisition.jsonl").read_text() == acquired  # no episode rerun
    assert json.loads((run_dir / "metrics.json").read_text()) == metrics


# --- 7. bad values fail before any work -------------------------------------------------------
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("protocol.max_eval_tasks=abc", "protocol.max_eval_tasks='abc' must be an int or null"),
        ("protocol.concurrency=0", "protocol.concurrency=0 must be >= 1"),
        ("protocol.temperature=-1", "protocol.temperature=-1 must be >= 0.0"),
    ],
)
def test_a_bad_protocol_value_fails_before_anything_runs(tmp_path, override, message):
    proc = run_py([*SCRIPTED, "method=memco", override, f"paths.results_dir={tmp_path}"])
    assert proc.returncode == 2
    assert message in proc.stderr and "the run did not start" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())  # no run directory, no acquisition
