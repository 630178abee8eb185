"""Evidence that memory *helps* (issue 52 item 4): on one shared real run of ``env=recall`` (the
embedded SmolLM2-135M as agent and memory LLM, greedy, seed 0, the smallest configuration that
separates the arms: 2 domains x 2 devices, 8 training and 4 test tasks whose codes only the
training tasks showed), each memory method that beat ``none`` in the measured table (README,
"Does memory help?") succeeds on more of the same test tasks than ``none`` by a stated margin.
The existing written / retrieved / shown checks are in tests/test_memory_end_to_end.py; these
assert the effect.

Margin: at least one test task of four more than ``none``. Measured (2026-12-05): ``none`` 0 of
4 (chance 1/64 per task), every other arm 3 of 4 (MemCo 0.625: the mean of its two domain
agents per task), so the margin holds with two tasks to spare. Break retrieval (the runner hands
the agent an empty MemoryContext, first retrieval and per step, ``agent/runner.py``) and every
arm falls to ``none``'s 0: each test here fails (issue 52's closing note).

One multirun (``-m experiment=recall seed=0 method=... env.families=2``) builds every arm once
per session: about 2.5 CPU-minutes (149 s measured, 3m50s wall beside a test run on 2 cores).
The ReMe, MemSkill and LangMem arms are not here: they store only what SmolLM2 distils, and it
distils nothing usable (docs/methods.md, "Recall"). The demo's second-part helpers are checked
without a run (fast).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_runs import build_once

from conftest import run_py
from memarena.pipeline.demo_recall import wanted
from memarena.reports.recall import paired_gain, task_means

# the methods that beat none in the measured table (result names), and the gain each must show
MARGIN = 1 / 4
METHODS = {
    "memco": "memco", "gmemory": "gmemory", "evograph": "evograph",
    "memorybank": "memorybank_parity", "voyager": "voyager_parity",
    "generative_agents": "generative_agents_parity", "amem": "amem_full", "memrl": "memrl",
}  # fmt: skip


def _build(root: Path) -> None:
    methods = ",".join(["none", *METHODS])
    proc = run_py(["-m", "experiment=recall", f"method={methods}", "seed=0", "env.families=2",
                   f"paths.results_dir={root}"], timeout=1800)  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def _arm(root: Path, result_name: str) -> dict[str, float]:
    (metrics,) = (root / "recall" / "recall" / result_name).rglob("metrics.json")
    assert json.loads(metrics.read_text())["backbone_is_llm"]
    return task_means(metrics.parent)


@pytest.mark.xdist_group("recall-effect")
@pytest.mark.parametrize("method", list(METHODS))
def test_memory_beats_no_memory_on_the_same_tasks(tmp_path_factory, method):
    root = build_once(tmp_path_factory, "recall-effect", _build)
    base, arm = _arm(root, "none"), _arm(root, METHODS[method])
    assert set(arm) == set(base) and len(base) == 4  # the same 4 test tasks
    gain, *_ = paired_gain(arm, base)
    assert gain >= MARGIN, f"{method}: success {arm} vs none {base}: gain {gain:.3f} < {MARGIN:.3f}"


def test_the_demo_second_part_runs_only_on_a_bare_command():
    cfg = {"demo": {"second_part": "recall_demo"}}
    assert wanted(cfg, []) == "recall_demo"
    assert wanted(cfg, ["demo.second_part=recall_demo"]) == "recall_demo"
    assert wanted(cfg, ["paths.results_dir=/tmp/x"]) is None
    assert wanted({"demo": {"second_part": None}}, []) is None
    assert wanted({}, []) is None


def test_paired_gain_counts_only_shared_tasks():
    gain, low, high, n = paired_gain({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 0.0, "b": 1.0})
    assert (gain, n) == (0.5, 2) and low <= gain <= high
