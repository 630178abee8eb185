"""One served model for many jobs (scripts/serve.py, docs/clusters.md): the embedded model's
llama.cpp server started by the script on loopback, a 4-job joblib sweep as its clients, every
request in that one server's request log; the vLLM command line each Qwen preset gets (no vLLM
here: the command is checked, not run)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from needs import need_llama_cpp_server
from omegaconf import OmegaConf

from conftest import ROOT, compose_cfg, run_py
from memarena.core import ConfigError
from memarena.launch.serve import client_overrides, plan_server

KEY_ENV = "MEMARENA_TEST_SERVE_KEY"


def _plan(preset: str, *extra: str, **kw):
    cfg = compose_cfg([f"backbone={preset}", *extra])
    return plan_server(OmegaConf.to_container(cfg.backbone, resolve=True), preset, **kw)


@pytest.mark.parametrize("preset, tp", [("qwen3_4b", 1), ("qwen3_32b", 2), ("qwen2.5_7b", 1)])
def test_vllm_command_of_a_qwen_preset(preset, tp):
    plan = _plan(preset, port=8001, api_key="k")
    cmd = plan.command
    assert cmd[:3] == ["vllm", "serve", plan.served_name] and plan.kind == "vllm"
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == str(tp)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and cmd[cmd.index("--port") + 1] == "8001"
    assert "--enable-prefix-caching" in cmd  # engine_kwargs.enable_prefix_caching
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    assert "--enable-auto-tool-choice" in cmd and cmd[cmd.index("--api-key") + 1] == "k"
    thinking = "--default-chat-template-kwargs" in cmd
    assert thinking == preset.startswith("qwen3")  # Qwen2.5 has no thinking switch
    if thinking:
        assert json.loads(cmd[cmd.index("--default-chat-template-kwargs") + 1]) == {
            "enable_thinking": False}  # fmt: skip
    overrides = client_overrides(plan, "http://h:8001/v1", KEY_ENV)
    assert overrides[:3] == ["backbone=openai_server", "backbone.base_url=http://h:8001/v1",
                             f"backbone.model={plan.served_name}"]  # fmt: skip
    assert f"backbone.api_key_env={KEY_ENV}" in overrides
    assert compose_cfg([o.strip("'") for o in overrides]).backbone.model == plan.served_name


def test_preset_overrides_reach_the_command():
    sets = ["backbone.max_model_len=16384", "backbone.tensor_parallel_size=4"]
    cmd = _plan("qwen3_8b", *sets).command
    assert cmd[cmd.index("--max-model-len") + 1] == "16384"
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "4"


@pytest.mark.parametrize("preset", ["openai_server", "gpt_4o_mini", "scripted"])
def test_nothing_to_serve_is_refused(preset):
    with pytest.raises(ConfigError, match="nothing to serve"):
        _plan(preset)


def _start(args: list[str], log: Path, deadline_s: float = 240):
    """serve.py in its own process group; (the process, the lines it printed until ready)."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "serve.py"), *args],
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
                            start_new_session=True, cwd=ROOT)  # fmt: skip
    lines, end = [], time.monotonic() + deadline_s
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("memory:"):
            return proc, lines
    _stop(proc)
    pytest.fail(f"serve.py did not become ready: {lines}\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # serve.py stops its server on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def test_one_served_model_for_a_joblib_sweep(tmp_path, monkeypatch):
    """serve.py starts the embedded model's llama.cpp server (loopback, API key), prints the
    overrides; four jobs, two at a time, send all their requests to it: the server's request log
    holds every request the jobs counted (plus serve.py's start-up check), and every job's
    results are complete."""
    need_llama_cpp_server()
    monkeypatch.setenv(KEY_ENV, "serve-test-key")
    log = tmp_path / "server.log"
    proc, lines = _start(["backbone=smollm2_135m", "--port", "0", "--threads", "1",
                          "--api-key-env", KEY_ENV, "--log", str(log)], tmp_path / "serve.err")
    began = time.monotonic()
    try:
        agent = next(ln for ln in lines if ln.startswith("agent:")).split()[1:]
        url = next(o for o in agent if o.startswith("backbone.base_url=")).split("=", 1)[1]
        assert url.startswith("http://127.0.0.1:")
        assert f"backbone.api_key_env={KEY_ENV}" in agent
        sweep = run_py(["-m", "launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1,2,3",
                        "method=none", "env=pddl", "env.domains=[gripper]",
                        "protocol.step_budget=2", "protocol.max_train_tasks=0",
                        "protocol.max_eval_tasks=1", "logger=none", "backbone.cache_path=null",
                        *[o.strip("'") for o in agent], f"paths.results_dir={tmp_path / 'res'}",
                        f"paths.cache_dir={tmp_path / 'cache'}",
                        f"hydra.sweep.dir={tmp_path / 'sweep'}"], timeout=600)  # fmt: skip
        wall = time.monotonic() - began
        assert sweep.returncode == 0, sweep.stderr[-3000:]
    finally:
        _stop(proc)
    assert proc.returncode is not None
    metrics = [json.loads(p.read_text()) for p in (tmp_path / "res").rglob("metrics.json")]
    usages = [json.loads(p.read_text()) for p in (tmp_path / "res").rglob("usage.json")]
    assert sorted(m["seed"] for m in metrics) == [0, 1, 2, 3]
    assert all(m["n_episodes"] == 1 and m["n_errors"] == 0 for m in metrics), metrics
    assert all(m["backbone"] == "smollm2-135m-server" for m in metrics)
    sent = [u["agent"]["requests"] for u in usages]
    assert all(n > 0 for n in sent) and all(not u["agent"]["fallbacks"] for u in usages)
    served = log.read_text().count('"POST /v1/chat/completions HTTP/1.1" 200')
    assert served == sum(sent) + 1, (served, sent)  # + serve.py's one start-up completion
    print(f"serve: 4 jobs, {sum(sent)} requests to one server, {wall:.1f} s from ready to done")
