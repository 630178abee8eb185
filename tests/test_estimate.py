"""scripts/estimate.py's arithmetic against a real run's counts.

A tiny sweep (MemCo on generated PDDL, 4 train / 4 test tasks, 2 evaluation runs, 2 seeds) is
estimated from one capped measuring run (1 run, 4 / 4 tasks); then one of its jobs runs for
real with the same counting expert (epsilon 0, so both runs of the job play as the measured
one did). Its episodes, agent requests, prompt and completion tokens must be the estimate's
``low`` bound within 10%: the scaling by runs, views (MemCo's 4 domain agents) and train tasks
is what is checked; ``high`` must bound them.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from memarena.launch import estimate as E
from memarena.launch import measure
from memarena.pipeline import run

SWEEP = [
    "experiment=null", "method=memco", "env=pddl", "backbone=scripted", "seed=0,1",
    "protocol.max_train_tasks=4", "protocol.max_eval_tasks=4", "protocol.runs=2",
]  # fmt: skip


@pytest.fixture(scope="module")
def estimated():
    est = E.settings(["estimate.measure.epsilon=0.0"])
    rows = E.estimate(SWEEP, est)
    return est, rows


def test_sweep_jobs_expand_like_hydra():
    jobs = E.sweep_jobs(["experiment=memco_table1_alfworld"])
    assert len(jobs) == 7 * 3 * 3  # methods x backbones x seeds (base/memco_table1_sweep)
    assert "method=icl" in jobs[0] and "backbone=qwen3_4b" in jobs[0] and "seed=0" in jobs[0]
    # a command-line value takes the key from the experiment's sweep
    assert len(E.sweep_jobs(["experiment=memco_table1_alfworld", "method=memco"])) == 9


def test_estimate_matches_a_real_run(estimated, tmp_path):
    est, rows = estimated
    assert len(rows) == 2 and rows[0].cell == rows[1].cell == "memco / pddl_generated"
    row = rows[0]
    # 4 train tasks (1 sample each) + 4 test tasks x 4 domain agents x 2 runs
    assert row.episodes == 4 + 4 * 4 * 2
    job = [o for o in SWEEP if not o.startswith("seed")] + ["seed=0"]
    cfg = E.compose_job(job)
    uncapped = OmegaConf.create(
        {"max_train_tasks": 10**6, "max_eval_tasks": 10**6, "epsilon": 0.0, "results_dir": None}
    )
    overrides = [
        o for o in E.measuring_overrides(job, cfg, uncapped, tmp_path)
        if o not in ("protocol.runs=1", "protocol.repetitions=1")
    ]  # fmt: skip
    measure.reset()
    metrics = run(E.compose_measuring(overrides))
    calls = sum(c[0] for c in measure.CALLS.values())
    prompt = sum(c[1] for c in measure.CALLS.values())
    completion = sum(c[2] for c in measure.CALLS.values())
    assert metrics["n_episodes"] + metrics["acquisition_episodes"] == row.episodes
    for name, real, (low, high) in (
        ("LLM calls", calls, row.calls),
        ("prompt tokens", prompt, row.prompt),
        ("completion tokens", completion, row.completion),
    ):
        assert abs(low - real) <= 0.1 * real, (name, low, real)
        assert high >= real, (name, high, real)


def test_prices_follow_the_stated_rates(estimated):
    est, rows = estimated
    row = rows[0]
    api = E.price(OmegaConf.create({"backbone": {"name": "gpt-4o-mini"}}), row, est)
    rate = est.api_prices["gpt-4o-mini"]
    low = (row.prompt[0] * rate.input_per_mtok + row.completion[0] * rate.output_per_mtok) / 1e6
    assert api[1] == "$" and api[0][0] == pytest.approx(low)
    gpu = E.price(
        OmegaConf.create({"backbone": {"name": "qwen3-32b", "tensor_parallel_size": 2}}), row, est
    )
    t = est.gpu_throughput["qwen3-32b"]
    hours = 2 * (row.prompt[1] / t.prefill_tokens_per_s + row.completion[1] / t.decode_tokens_per_s)
    assert gpu[1] == "GPU-h" and gpu[0][1] == pytest.approx(hours / 3600)


def test_an_unknown_setting_is_refused():
    with pytest.raises(Exception, match="estimate.nope is not a key of conf/estimate.yaml"):
        E.settings(["estimate.nope=1"])


def test_the_table_prints_each_cell_once(estimated):
    _, rows = estimated
    text = E.table(rows)
    assert text.count("memco / pddl_generated") == 1 and "jobs: 2" in text
