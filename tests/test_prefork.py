"""tests/prefork.py: a script forked from the warm zygote behaves as ``python SCRIPT`` would:
its argv, working directory, environment and path; its output; its exit status (exit codes,
an uncaught exception's traceback and status 1); a timeout kills it and what it started."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_script

SCRIPT = """
import json, os, sys
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PREFORK_T"),
                  "path0": sys.path[0], "tests_on_path": any(p.rstrip("/").endswith("tests")
                  for p in sys.path), "main": __name__, "file": __file__}))
print("to stderr", file=sys.stderr)
"""


def _script(tmp_path, body: str):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_forked_script_sees_its_argv_cwd_environment_and_path(tmp_path, monkeypatch):
    import json

    script = _script(tmp_path, SCRIPT)
    monkeypatch.delenv("PREFORK_T", raising=False)
    assert json.loads(run_script(script, []).stdout)["env"] is None  # the zygote is warm now
    monkeypatch.setenv("PREFORK_T", "set by the test")
    proc = run_script(script, ["a", 2], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "to stderr\n"
    seen = json.loads(proc.stdout)
    assert seen["argv"] == [str(script), "a", "2"] and seen["cwd"] == str(tmp_path)
    assert seen["env"] == "set by the test" and seen["main"] == "__main__"
    assert seen["path0"] == str(tmp_path) and seen["file"] == str(script)
    assert not seen["tests_on_path"]  # the zygote's own folder is not on a script's path
    assert json.loads(run_script(script, [], doubles=True).stdout)["tests_on_path"]


@pytest.mark.parametrize(
    ("body", "code", "stderr"),
    [
        ("import sys; sys.exit(3)", 3, ""),
        ("import sys; sys.exit('stopped: a message')", 1, "stopped: a message\n"),
        ("raise ValueError('boom')", 1, "ValueError: boom"),
        ("import os; os._exit(7)", 7, ""),
    ],
)
def test_exit_status_as_the_interpreter_gives_it(tmp_path, body, code, stderr):
    proc = run_script(_script(tmp_path, body), [])
    assert proc.returncode == code
    assert stderr in proc.stderr
    if "raise" in body:
        assert "Traceback (most recent call last)" in proc.stderr


def test_a_timeout_kills_the_script_and_what_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    body = f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(300)
    """
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as stopped:
        run_script(_script(tmp_path, body), [], timeout=8)
    assert time.monotonic() - start < 30 and stopped.value.output == "started\n"
    pid = int(pid_file.read_text())
    for _ in range(50):  # the grandchild was in the killed process group
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the script's child {pid} outlived the timeout")


def _forked_and_spawned(tmp_path: Path, args: list[str]) -> list[Path]:
    """The run of ``args`` forked from the zygote, then spawned as ``python run.py``: the
    folder of each one's metrics.json."""
    folders = []
    for name in ("forked", "spawned"):
        results = tmp_path / name
        argv = [*args, f"paths.results_dir={results}", f"paths.llm_cache={results}/c.sqlite"]
        if name == "forked":
            proc = run_script(ROOT / "run.py", argv)
        else:
            proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *argv], cwd=ROOT,
                                  capture_output=True, text=True, timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        (metrics,) = results.rglob("metrics.json")
        folders.append(metrics.parent)
    return folders


def test_run_py_through_the_zygote_matches_a_spawned_run(tmp_path):
    """The same scripted run forked and spawned: the same metrics."""
    args = ["env=pddl", "method=none", "backbone=scripted", "logger=none",
            "protocol.max_eval_tasks=2"]  # fmt: skip
    outs = []
    for run in _forked_and_spawned(tmp_path, args):
        data = json.loads((run / "metrics.json").read_text())
        outs.append({k: data[k] for k in ("success_rate", "progress_rate", "n_episodes")})
    assert outs[0] == outs[1]


def test_the_warm_process_starts_in_the_sessions_environment_not_a_tests(monkeypatch):
    """A test that changes the environment and then starts the first run must not leave that
    environment in the warm process every later run forks from (imports read it)."""
    from prefork import ZYGOTE, Zygote

    zygote = Zygote()
    zygote.start_env = dict(ZYGOTE.start_env)  # as conftest took it, before any test ran
    monkeypatch.setenv("MEMARENA_TEST_ONLY_VARIABLE", "set by this test")
    try:
        proc = zygote._started()
        environ: list[bytes] = []
        for _ in range(100):  # until the zygote has exec'd (its own environment, then)
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
            if any(e.startswith(b"PATH=") for e in environ):
                break
            time.sleep(0.05)
    finally:
        zygote.stop()
    assert b"MEMARENA_TEST_ONLY_VARIABLE=set by this test" not in environ
    assert any(e.startswith(b"PATH=") for e in environ)


def test_a_memory_run_with_the_embedded_model_forked_matches_it_spawned(tmp_path):
    """ReMe with the embedded SmolLM2 as its summarizer (acquisition writes experiences with
    the model, evaluation retrieves them), forked and spawned: the same metrics and the same
    memory, byte for byte."""
    args = ["env=pddl", "method=reme", "backbone=scripted", "logger=none",
            "protocol.max_train_tasks=1", "protocol.max_eval_tasks=1", "protocol.step_budget=6",
            "method.samples=1", "method.max_tokens=48", "method.scenario_chars=200",
            "method.experience_chars=400"]  # fmt: skip
    outs = []
    for run in _forked_and_spawned(tmp_path, args):
        data = json.loads((run / "metrics.json").read_text())
        memory = (run / "memory" / "memory.json").read_bytes()
        outs.append((data["memory_token_usage"], data["success_rate"], data["memory_size"], memory))
    assert outs[0] == outs[1]
    assert outs[0][0]["summarize"]["calls"] > 0  # the model was asked

