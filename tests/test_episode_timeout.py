"""Episodes end in bounded time (issue 36 item 10): ``protocol.episode_timeout_s`` ends an
episode still running past it with status ``timeout`` (checked between steps), the others go
on, and the run says so in its metrics (``n_timeouts``, flag ``timeouts``). The PDDL expert's
own bound on large problems is in tests/envs/test_pddl_large_problems.py."""

from __future__ import annotations

import json

import pytest

from conftest import run_py
from memarena.core import ConfigError
from memarena.pipeline.protocol import ProtocolSettings


def test_an_episode_past_its_time_limit_is_recorded_as_timeout_and_the_run_goes_on(tmp_path):
    proc = run_py(
        [
            "env=pddl",
            "method=none",
            "backbone=scripted",
            "logger=none",
            "protocol.max_eval_tasks=4",
            "protocol.concurrency=2",  # two batches: the second starts after the first timed out
            "protocol.episode_timeout_s=0.000001",  # past it after the first step, always
            f"paths.results_dir={tmp_path}",
        ],
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (episodes,) = tmp_path.rglob("episodes.jsonl")
    records = [json.loads(line) for line in episodes.read_text().splitlines()]
    assert len(records) == 4
    for record in records:
        assert record["status"] == "timeout" and record["steps"] == 1 and not record["success"]
        assert "protocol.episode_timeout_s=1e-06" in record["error"]
    metrics = json.loads((episodes.parent / "metrics.json").read_text())
    assert metrics["n_timeouts"] == 4 and metrics["n_errors"] == 0
    assert "timeouts" in metrics["flags"] and "errors" not in metrics["flags"]


@pytest.mark.parametrize(
    "values, message",
    [
        ({"episode_timeout_s": 0}, "episode_timeout_s=0 would end every episode"),
        ({"episode_timeout_s": -1.0}, "episode_timeout_s=-1.0 must be >= 0.0"),
        ({"max_error_rate": 1.5}, "max_error_rate=1.5 is a fraction of episodes"),
        ({"max_error_rate": "high"}, "max_error_rate='high' must be a number or null"),
    ],
)
def test_bad_limits_are_refused_before_anything_runs(values, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ProtocolSettings(**values)
