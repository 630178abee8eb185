"""SIGTERM (a Slurm preemption) and SIGHUP end a run like Ctrl-C: the records kept whole,
``run_info.json`` closed as ``terminated``, the logger (W&B) finished, the models closed, and the
status of a process killed by the signal (143, 129). A resume then completes the run equal to
an uninterrupted one; a sweep stops after closing its current job (issue 36 item 5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import test_resume

from conftest import ROOT, run_py
from memarena.pipeline.ending import StopOnSignals, Terminated
from memarena.results.loggers import read_offline_run

reference = test_resume.reference  # the uninterrupted run's metrics (module-scoped fixture)


def _start_paused(args: list[str], file: str, after: int) -> subprocess.Popen:
    """Start the real entry point (``python run.py ARGS``) in a process that waits, in its
    main thread, right after the ``after``-th record of ``file`` was written: the test's
    signal reaches a run at a known point."""
    code = textwrap.dedent(
        f"""
        import runpy, sys, time
        from memarena.results import store
        original, seen = store.RunStore.append, {{"n": 0}}
        def append(self, name, record):
            original(self, name, record)
            if name == {file!r}:
                seen["n"] += 1
                if seen["n"] == {after}:
                    while True:
                        time.sleep(0.05)
        store.RunStore.append = append
        sys.argv = ["run.py"] + {args!r}
        runpy.run_path({str(ROOT / "run.py")!r}, run_name="__main__")
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _signal_at(proc: subprocess.Popen, results: Path, file: str, after: int, sig: int) -> str:
    """Wait for the ``after``-th line of ``file`` under ``results``, send ``sig``, return what
    the run printed."""
    deadline = time.monotonic() + 240
    try:
        while sum(len(p.read_text().splitlines()) for p in results.rglob(file)) < after:
            assert proc.poll() is None, f"the run ended before its records: {proc.stdout.read()}"
            assert time.monotonic() < deadline, "the run wrote no records in time"
            time.sleep(0.1)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out


def _invocations(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "run_info.json").read_text())["invocations"]


def test_sigterm_closes_the_run_and_a_resume_matches_uninterrupted(tmp_path, reference):
    args = [*test_resume.ARGS, f"paths.results_dir={tmp_path}"]
    proc = _start_paused(args, "episodes.jsonl", 3)
    out = _signal_at(proc, tmp_path, "episodes.jsonl", 3, signal.SIGTERM)
    assert proc.returncode == 143, out[-3000:]
    assert "memarena: terminated by SIGTERM; the records written so far are kept" in out
    assert "Traceback" not in out, out[-3000:]
    (run_dir,) = {p.parent for p in tmp_path.rglob("episodes.jsonl")}
    (first,) = _invocations(run_dir)
    assert first["finished"] is not None and first["wall_s"] > 0
    assert first["status"] == "terminated" and first["outcome"] == "terminated by SIGTERM"
    before = (run_dir / "episodes.jsonl").read_text()
    assert before.endswith("\n") and len(before.splitlines()) == 3
    assert all(json.loads(line) for line in before.splitlines())  # whole records
    assert not list(tmp_path.rglob("*.tmp")) and not (run_dir / "metrics.json").exists()

    proc = run_py(args)  # the lock was released: the resume takes the run directory
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (run_dir / "episodes.jsonl").read_text().startswith(before)  # none rerun
    assert test_resume._metrics(tmp_path) == reference
    runs = _invocations(run_dir)
    assert [r["status"] for r in runs] == ["terminated", "finished"]


def test_sighup_stops_a_sweep_after_closing_its_current_job(tmp_path):
    args = [
        "-m",
        "seed=0,1",
        "env=pddl",
        "method=none",
        "backbone=scripted",
        "logger=wandb",  # offline: a file in the run directory
        "logger.system_metrics=false",
        "protocol.max_eval_tasks=6",
        f"paths.results_dir={tmp_path}",
        f"paths.llm_cache={tmp_path}/.llm_calls.sqlite",
        f"hydra.sweep.dir={tmp_path}/sweep",
    ]
    proc = _start_paused(args, "episodes.jsonl", 2)
    out = _signal_at(proc, tmp_path, "episodes.jsonl", 2, signal.SIGHUP)
    assert proc.returncode == 129, out[-3000:]
    assert "memarena: terminated by SIGHUP" in out
    (run_dir,) = {p.parent for p in tmp_path.rglob("run_info.json")}  # job 1 never started
    assert run_dir.name == "seed0"
    (first,) = _invocations(run_dir)
    assert first["status"] == "terminated" and first["outcome"] == "terminated by SIGHUP"
    logged = read_offline_run(run_dir)  # W&B's run finished, with the signal's status
    assert logged["state"] != "running" and logged["exit_code"] == 129


def test_a_signal_while_the_run_is_closing_waits_for_the_closing():
    previous = signal.getsignal(signal.SIGTERM)
    closed = False
    with pytest.raises(Terminated) as stopped:
        with StopOnSignals() as signals:
            with signals.closing():
                os.kill(os.getpid(), signal.SIGTERM)  # remembered, not raised here
                time.sleep(0.05)
                closed = True
    assert closed and stopped.value.signum == signal.SIGTERM and stopped.value.exit_status == 143
    assert signal.getsignal(signal.SIGTERM) is previous  # the handler put back


def test_the_handlers_are_installed_only_in_the_main_thread():
    seen = {}

    def job() -> None:
        with StopOnSignals():
            seen["handler"] = signal.getsignal(signal.SIGTERM)

    thread = threading.Thread(target=job)
    thread.start()
    thread.join()
    assert seen["handler"] is signal.getsignal(signal.SIGTERM)  # not replaced
    with StopOnSignals() as signals:
        assert signal.getsignal(signal.SIGTERM) == signals._handle
