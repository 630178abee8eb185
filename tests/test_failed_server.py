"""A failed server never looks like a result (issue 36 item 2): the real entry point (run.py in
a subprocess) against a real OpenAI-compatible HTTP server on loopback that fails.

- A server that answers every request with HTTP 500: with 4 tasks the runner's stop after
  ``protocol.max_failed_batches`` all-failed steps never fires (one batch), yet the run exits
  non-zero with the server's message, after writing its records and ``metrics.json`` with the
  flag ``errors``; ``make_tables.py`` marks the run.
- A server that answers HTTP 400 "maximum context length" for some prompts: the 400 is not
  retried (the server counts the requests), the episode's error names the prompt's token count
  and the model's limit, and an error rate over ``protocol.max_error_rate`` exits non-zero once
  the records are written; a higher limit lets the resumed run finish, whose log does not count
  the error episode as done.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from doubles import first_choice_completion

from conftest import ROOT, run_py, run_script
from memarena.llm.local_server import free_port

CRASH = "worker crashed: CUDA error: an illegal memory access was encountered"
TOO_LONG = (
    "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
    "(2052 in the messages, 48 in the completion). Please reduce the length of the messages or "
    "completion."
)


class FailingServer:
    """An OpenAI-compatible chat server on 127.0.0.1 that answers ``answer(body)``: None for
    the first offered choice, else ``(status, message)`` as an error in vLLM's shape. Counts
    the requests it got per user prompt kind (``kind(body)``)."""

    def __init__(self, answer, kind=lambda body: "all") -> None:
        self.port = free_port()
        self.requests: Counter[str] = Counter()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests[kind(body)] += 1
                failure = answer(body)
                if failure is None:
                    status, reply = 200, first_choice_completion(body)
                else:
                    status, message = failure
                    reply = {"object": "error", "message": message, "type": "Error", "code": status}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FailingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _args(tmp_path: Path, port: int) -> list[str]:
    return [
        "env=pddl",
        "method=none",
        "backbone=openai_server",
        f"backbone.base_url=http://127.0.0.1:{port}/v1",
        "backbone.max_retries=3",  # a retryable failure would be asked 4 times
        "backbone.backoff_s=0.05",
        "backbone.timeout=10",
        "logger=none",
        "protocol.max_eval_tasks=4",  # one task per domain, one batch: no 3 all-failed steps
        "protocol.step_budget=3",
        f"paths.results_dir={tmp_path}/results",
        f"paths.cache_dir={tmp_path}/cache",
    ]


def _said(proc: subprocess.CompletedProcess) -> str:
    return " ".join(f"{proc.stdout}\n{proc.stderr}".split())


def _run_dir(results: Path) -> Path:
    (path,) = results.rglob("episodes.jsonl")
    return path.parent


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


def test_a_server_that_fails_every_request_ends_the_run_non_zero_with_its_message(tmp_path):
    with FailingServer(lambda body: (500, CRASH)) as server:
        proc = run_py(_args(tmp_path, server.port), timeout=300)
    said = _said(proc)
    assert proc.returncode == 2, said[-3000:]
    assert "4 of 4 evaluation episodes ended with an error, all of them" in said
    assert CRASH in said and "rerun the same command" in said
    run_dir = _run_dir(tmp_path / "results")
    records = _records(run_dir)
    assert len(records) == 4 and {r["status"] for r in records} == {"error"}
    assert all(CRASH in r["error"] for r in records)
    assert server.requests["all"] == 4 * 4  # 500 is retried: first try + max_retries=3
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_errors"] == 4 and metrics["success_rate"] == 0.0
    assert "errors" in metrics["flags"]

    make_tables = ["--results-dir", str(tmp_path / "results"), "--out", str(tmp_path / "tables")]
    refused = run_script(ROOT / "scripts/make_tables.py", make_tables, timeout=300)
    assert refused.returncode == 2 and "errors" in refused.stderr  # flagged: nothing written
    tables = run_script(
        ROOT / "scripts/make_tables.py", [*make_tables, "--allow-flagged"], timeout=300
    )
    assert tables.returncode == 0, tables.stderr[-2000:]
    (row,) = [line for line in tables.stdout.splitlines() if "qwen3-8b-server" in line]
    assert "errors" in row  # the flags column of the summary row
    warned = _said(tables)
    assert "WARNING: 1 run(s) are not clean results" in warned
    assert f"{run_dir}: 4 of 4 evaluation episodes ended with an error" in warned


def _gripper(body: dict) -> str:
    """Which prompts are too long: those of the gripper task (one of the four; the worked
    examples of every prompt name balls too, its goal does not)."""
    text = " ".join(str(m.get("content")) for m in body["messages"])
    return "gripper" if "following conditions: ball" in text else "other"


def test_a_context_length_400_is_not_retried_names_the_tokens_and_trips_the_error_rate(tmp_path):
    def answer(body):
        return (400, TOO_LONG) if _gripper(body) == "gripper" else None

    with FailingServer(answer, _gripper) as server:
        args = _args(tmp_path, server.port)
        proc = run_py(args, timeout=300)
        said = _said(proc)
        assert proc.returncode == 2, said[-3000:]
        assert server.requests["gripper"] == 1  # one episode, one request: not retried
        assert (
            "1 of 4 evaluation episodes ended with an error, over protocol.max_error_rate" in said
        )
        run_dir = _run_dir(tmp_path / "results")
        records = {r["task_id"]: r for r in _records(run_dir)}
        assert len(records) == 4  # every record written before the run stopped
        (failed,) = [r for r in records.values() if r["status"] == "error"]
        assert "not retried" in failed["error"]
        assert "prompt 2052 tokens; the model's limit: 2048 tokens" in failed["error"]
        assert TOO_LONG in failed["error"]  # the server's own words
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["n_errors"] == 1 and "errors" in metrics["flags"]

        # a limit above the rate: the resume retries the error episode only and finishes
        again = run_py([*args, "protocol.max_error_rate=0.5"], timeout=300)
    assert again.returncode == 0, _said(again)[-3000:]
    assert "4 tasks (3 already done, 1 to retry)" in _said(again)
    assert server.requests["gripper"] == 2
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_errors"] == 1 and metrics["retried_records"] == 1
    assert "errors" in metrics["flags"]


# --- acquisition: no snapshot learnt from error episodes ---------------------------------------
def test_acquisition_over_the_error_rate_stops_before_the_snapshot_and_a_rerun_retries(tmp_path):
    from test_pipeline_learning import Recorder, StepEnv, _parts

    from memarena.pipeline import acquire
    from memarena.pipeline.summarize import TooManyErrors
    from memarena.results import store as files

    class Outage(StepEnv):
        """The last train task's episodes cannot start (1 task of 4: rate 0.25; the last, so
        no later task saw a memory that had observed them and a rerun retries them alone)."""

        down = True

        def open(self, task):
            if self.down and task.id == "train3":
                raise ConnectionError("env server at 127.0.0.1:1 refused the connection")
            return super().open(task)

    parts = _parts(tmp_path, Recorder(), update_every=1)
    parts.env = Outage()
    with pytest.raises(TooManyErrors, match="3 of 12 acquisition episodes ended with an error"):
        acquire(parts, parts.policy)
    assert len(parts.store.read_records(files.ACQUISITION)) == 12  # every record written
    assert not parts.store.snapshot_complete()  # no memory learnt from the outage

    parts.env.down = False  # the server is back: the rerun retries the 3 error episodes only
    memory = Recorder()
    again = _parts(tmp_path, memory, update_every=1)
    again.env = parts.env
    acquire(again, again.policy)
    assert again.store.snapshot_complete()
    assert len(again.store.read_records(files.ACQUISITION)) == 12 + 3


def test_the_error_rules(tmp_path):
    from types import SimpleNamespace

    from memarena.pipeline.summarize import TooManyErrors, check_errors
    from memarena.results.records import EpisodeRecord

    def records(errors: int, total: int) -> list[EpisodeRecord]:
        return [
            EpisodeRecord.from_json(
                {
                    "task_id": f"t{i}",
                    "success": False,
                    "progress": 0.0,
                    "steps": 0,
                    "status": "error" if i < errors else "failure",
                    "error": "LLM request failed: boom" if i < errors else None,
                }
            )  # fmt: skip
            for i in range(total)
        ]

    def parts(limit):
        return SimpleNamespace(
            protocol=SimpleNamespace(max_error_rate=limit), store=SimpleNamespace(dir=tmp_path)
        )

    check_errors(parts(0.1), records(1, 10), "evaluation")  # at the limit: accepted
    check_errors(parts(None), records(9, 10), "evaluation")  # no limit
    with pytest.raises(TooManyErrors, match="2 of 10 .* over protocol.max_error_rate=0.1"):
        check_errors(parts(0.1), records(2, 10), "evaluation")
    with pytest.raises(TooManyErrors, match=r"10 of 10 .* all of them\. The commonest .*boom"):
        check_errors(parts(None), records(10, 10), "evaluation")  # all: whatever the limit
