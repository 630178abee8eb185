"""AppWorld (env=appworld) through the package's own environment server in .venv-appworld.

The real-server tests need AppWorld's venv (`make appworld`; `make test` builds it) and fail
at set-up naming that fix without it (tests/needs.py). AppWorld's task data is a download this
machine cannot reach, so they run on the offline smoke root built with the package's own
tooling (smoke_root.py), and they check the exact errors the real server gives where data is
missing.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from needs import APPWORLD_VENV, need_appworld_venv

from conftest import run_py
from memarena.core.errors import ConfigError
from memarena.envs.appworld import (
    AppWorldEnv,
    AppWorldServer,
    AppWorldServerError,
    extract_code,
    goal_completion,
)
from memarena.envs.appworld.data import build_smoke_root

VENV_PYTHON = APPWORLD_VENV / "bin" / "python"


@pytest.fixture(scope="module")
def appworld_venv() -> Path:
    return need_appworld_venv()


needs_venv = pytest.mark.usefixtures("appworld_venv")


# -- no venv needed ----------------------------------------------------------------------------
def test_extract_code_takes_the_first_python_block_like_remes_agent():
    reply = "think\n```python\nx = 1\nprint(x)\n```\nthen\n```python\ny = 2\n```"
    assert extract_code(reply) == "x = 1\nprint(x)"
    assert extract_code("comment\n```python\nprint(3)") == "print(3)"  # cut off at the end
    assert extract_code("print(4)") == "print(4)"  # no block: the reply is the code


def test_goal_completion_counts_tasks_and_whole_scenarios():
    rows = [
        {"task_id": "appworld/test/a_1", "success": True, "run": 0},
        {"task_id": "appworld/test/a_2", "success": True, "run": 0},
        {"task_id": "appworld/test/b_1", "success": True, "run": 0},
        {"task_id": "appworld/test/b_2", "success": False, "run": 0},
    ]
    # TGC 3/4 tasks; SGC: scenario a passes, b does not -> 1/2
    assert goal_completion(rows) == {"tgc": 0.75, "sgc": 0.5, "n_tasks": 4, "n_scenarios": 2}


def test_missing_venv_is_one_error_naming_the_fix(tmp_path):
    env = AppWorldEnv(python=str(tmp_path / "no-venv" / "bin" / "python"))
    with pytest.raises(ConfigError, match=r"make appworld.*env\.python|env\.python.*make appworld"):
        env.tasks("train")
    proc = run_py(["env=appworld", "method=none", "backbone=scripted", "logger=none",
                   f"env.python={tmp_path}/no-venv/bin/python",
                   f"paths.results_dir={tmp_path}"])  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-2000:]
    assert out.count("make appworld") == 1 and "Traceback" not in out


def test_paper_runs_refuse_to_start_without_the_data():
    with pytest.raises(ConfigError, match="env.root"):
        AppWorldEnv(root=None, require_data=True)


@needs_venv
def test_missing_data_is_one_error_naming_the_download(tmp_path):
    env = AppWorldEnv(python=str(VENV_PYTHON), root=str(tmp_path))
    with pytest.raises(ConfigError, match="appworld download data"):
        env.tasks("test")


# -- the real server -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke(appworld_venv, tmp_path_factory) -> Path:
    cache = tmp_path_factory.mktemp("appworld")
    build_smoke_root(str(VENV_PYTHON), str(cache / "smoke_root"))
    return cache


@needs_venv
def test_real_cli_server_stops_where_the_data_is_missing(tmp_path):
    """`appworld serve environment` itself: no data/ -> it exits with AppWorld's message; an
    empty data/ -> it serves, and /initialize fails on the missing task folder."""
    server = AppWorldServer(str(VENV_PYTHON), str(tmp_path), 0, launcher="cli",
                            log_dir=str(tmp_path))  # fmt: skip
    server.port = __import__("memarena.envs.appworld.server", fromlist=["x"]).free_port()
    server.client.base_url = f"http://127.0.0.1:{server.port}"
    assert server.command()[1:3] == ["serve", "environment"]
    with pytest.raises(AppWorldServerError, match="Did not find any ./data in the AppWorld's root"):
        server.start()
    (tmp_path / "data").mkdir()
    try:
        server.start()
        assert server.client.alive()
        with pytest.raises(AppWorldServerError) as info:
            server.client.initialize("82e2fac_1", experiment_name="memarena_test")
        text = str(info.value)
        assert "HTTP 500" in text
        assert f"The task directory ({tmp_path}/data/tasks/82e2fac_1) doesn't exist." in text
    finally:
        server.stop()
    assert not server.running()


@needs_venv
def test_real_server_protocol_on_the_smoke_root(smoke, tmp_path):
    root = str(smoke / "smoke_root")
    # a relative python path works although the server runs in the root
    python = os.path.relpath(VENV_PYTHON)
    server = AppWorldServer(python, root, port=_port(), log_dir=str(tmp_path))
    try:
        client = server.start().client
        info = client.initialize("smk003_2", experiment_name="memarena_test", max_interactions=30)
        assert info["instruction"] == "In which year was I born?"
        assert info["supervisor"]["email"] == "ada.lovelace@example.com"
        assert client.execute("smk003_2", "print(apis.supervisor.show_profile()['birthday'])") == (
            "1990-12-10\n"
        )
        assert client.execute("smk003_2", "x = (").startswith("Execution failed")
        assert client.task_completed("smk003_2") is False
        client.execute("smk003_2", "apis.supervisor.complete_task(answer=1989)")
        assert client.task_completed("smk003_2") is True
        report = client.evaluate("smk003_2")  # wrong answer, but the task is marked completed
        assert (report["success"], report["num_tests"], len(report["passes"])) == (False, 2, 1)
        assert report["failures"][0]["requirement"] == "the answer matches."
        client.close("smk003_2")
    finally:
        server.stop()


@needs_venv
def test_episodes_expert_feedback_and_a_crashed_server(smoke):
    env = AppWorldEnv(python=str(VENV_PYTHON), cache_dir=str(smoke), n_servers=1)
    try:
        assert env.name == "appworld" and [t.payload["task_id"] for t in env.tasks("train")] == [
            "smk001_1", "smk001_2"
        ]  # fmt: skip
        task = env.tasks("test")[0]
        # the goal (what memory retrieves by) is the instruction alone, as in ReMe's agent;
        # the supervisor is in the task's system prompt
        assert task.goal == "How many letters are in my first name?"
        assert "ada.lovelace@example.com" in env.prompt(task).system
        ep = env.open(task)
        obs = ep.reset()
        assert obs.goal == task.goal and "ada.lovelace" not in obs.text
        bad = ep.step(ep.parse_reply("```python\nprint(apis.supervisor.show_profile(\n```"))
        assert bad.observation.text.startswith("Output:\n```\nExecution failed")
        assert (bad.feedback.valid_action, bad.feedback.failure_label) == (False, "syntax_error")
        result = ep.step(ep.parse_reply(ep.expert_action()))
        assert result.done and result.success and result.progress == 1.0
        assert ep.details()["evaluation"]["passes"] == 2 and ep.expert_action() is None
        ep.close()

        # the server dies mid-episode: the request raises (the runner records an error) and
        # the pool restarts it for the next episode
        ep = env.open(task)
        ep.reset()
        os.killpg(ep.server.process.pid, signal.SIGKILL)
        ep.server.process.wait()
        with pytest.raises(AppWorldServerError, match="did not answer"):
            ep.step("print(1)")
        ep.close()
        ep = env.open(task)
        ep.reset()
        assert env.pool().restarts == 1
        wrong = ep.step("apis.supervisor.complete_task(answer=4)")
        assert wrong.done and not wrong.success and wrong.progress == 0.5
        ep.close()
    finally:
        env.close()
    assert not any(s.running() for s in env.pool().servers)


@needs_venv
def test_run_py_scripted_end_to_end(smoke, tmp_path):
    proc = run_py(["env=appworld", "method=none", "backbone=scripted", "logger=none",
                   f"env.cache_dir={smoke}", f"paths.results_dir={tmp_path}"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = tmp_path.rglob("metrics.json")
    metrics = json.loads(path.read_text())
    assert metrics["env"] == "appworld_smoke" and metrics["n_episodes"] == 2
    assert metrics["success_rate"] == 1.0
    rows = [json.loads(x) for x in (path.parent / "episodes.jsonl").read_text().splitlines()]
    assert goal_completion(rows) == {"tgc": 1.0, "sgc": 1.0, "n_tasks": 2, "n_scenarios": 1}
    assert (metrics["tgc"], metrics["sgc"], metrics["n_scenarios"]) == (1.0, 1.0, 1)
    assert {r["details"]["scenario"] for r in rows} == {"smk003"}


def _port() -> int:
    from memarena.envs.appworld.server import free_port

    return free_port()
