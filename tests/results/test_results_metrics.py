"""compute_metrics on hand-built episode records; the expected numbers are worked out inline."""

import math

import pytest

from memarena.results.metrics import compute_metrics, flatten
from memarena.results.stats import wilson_ci


def ep(task, run, success, progress, steps, *, domain="kitchen", status=None, tokens=100):
    return {"task_id": task, "split": "test", "domain": domain, "run": run, "success": success,
            "progress": progress, "steps": steps,
            "status": status or ("success" if success else "failure"), "error": None,
            "prompt_tokens": tokens - 10, "completion_tokens": 10, "tokens": tokens,
            "memory_ids": [], "wall_s": 0.1}


def four_runs():
    """3 tasks x 4 runs. a: always succeeds; b: succeeds in run 1 only; c: never (one error)."""
    recs = []
    for run in range(4):
        recs.append(ep("a", run, True, 1.0, 5))
        b_ok = run == 1
        recs.append(ep("b", run, b_ok, 1.0 if b_ok else 0.5, 8 if b_ok else 10))
        recs.append(ep("c", run, False, 0.25, 10, domain="bath",
                       status="error" if run == 2 else "budget"))
    return recs


def test_avg_and_pass_at_4():
    recs = four_runs()
    recs[0]["memory_cost"] = {
        "calls": 1, "entries": 2, "words": 10,
        "usage": {"rerank": {"calls": 1, "prompt_tokens": 250, "completion_tokens": 50}},
    }
    m = compute_metrics(recs)
    assert m["n_episodes"] == 12 and m["n_tasks"] == 3 and m["runs"] == 4
    # successes: a 4 + b 1 + c 0 = 5 of 12
    assert m["success_rate"] == pytest.approx(5 / 12)
    # per-run success: run0 1/3, run1 2/3, run2 1/3, run3 1/3 -> (5/3) / 4 = 5/12
    assert m["avg_at_k"] == pytest.approx(5 / 12)
    # tasks with any success: a, b -> 2/3
    assert m["pass_at_k"] == pytest.approx(2 / 3)
    # progress: a 4*1.0 + b (1.0 + 3*0.5) + c 4*0.25 = 4 + 2.5 + 1 = 7.5 -> 7.5 / 12
    assert m["progress_rate"] == pytest.approx(0.625)
    # steps: a 4*5 + b (8 + 3*10) + c 4*10 = 20 + 38 + 40 = 98 -> 98 / 12
    assert m["avg_steps"] == pytest.approx(98 / 12)
    # tokens: 12 episodes * 100 + 300 memory tokens = 1500 -> 1500 / 12 = 125
    assert m["tokens_per_task"] == pytest.approx(125.0)
    assert m["memory_tokens"] == 300
    assert m["n_errors"] == 1 and m["error_rate"] == pytest.approx(1 / 12)
    # kitchen (a, b): 8 episodes, 5 successes, progress (4 + 2.5) / 8; bath (c): 4, 0, 0.25
    assert m["per_domain"] == {
        "bath": {"success_rate": 0.0, "progress_rate": 0.25, "n_episodes": 4},
        "kitchen": {"success_rate": 0.625, "progress_rate": 0.8125, "n_episodes": 8},
    }


def wilson(p: float, n: int) -> tuple[float, float]:
    """Wilson's formula by hand: centre (p + z^2/2n) / (1 + z^2/n),
    half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)."""
    z = 1.959963984540054
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_the_interval_takes_the_task_as_its_unit():
    """3 tasks x 4 runs: a 4/4, b 1/4, c 0/4 -> task means 1, 0.25, 0; n = 3 tasks (not 12
    episodes), successes = 1.25, p = 1.25 / 3."""
    low, high = compute_metrics(four_runs())["success_rate_ci95"]
    assert (low, high) == pytest.approx(wilson(1.25 / 3, 3))
    assert (round(low, 4), round(high, 4)) == (0.0911, 0.8358)
    # over the 12 episodes it would be (0.1933, 0.6805): far narrower than 3 tasks allow
    episodes = wilson_ci(5, 12)
    assert (round(episodes[0], 4), round(episodes[1], 4)) == (0.1933, 0.6805)


def test_four_views_of_two_tasks_are_two_samples():
    """MemCo's evaluation: 4 agent views each play the same 2 test tasks and all succeed.
    8 episodes, but 2 sampled tasks: the interval is the 2-task one, Wilson(2, 2) =
    (0.342, 1.0), not Wilson(8, 8) = (0.676, 1.0)."""
    recs = []
    for view in ("barman", "blocksworld", "gripper", "tyreworld"):
        for task in ("t1", "t2"):
            recs.append({**ep(task, 0, True, 1.0, 5), "agent": view})
    m = compute_metrics(recs)
    assert m["n_episodes"] == 8 and m["n_tasks"] == 2
    assert m["success_rate_ci95"] == pytest.approx(list(wilson_ci(2, 2)))
    assert m["success_rate_ci95"] == pytest.approx(list(wilson(1.0, 2)))
    assert round(m["success_rate_ci95"][0], 3) == 0.342
    assert m["success_rate_ci95"][0] < wilson_ci(8, 8)[0] - 0.3


def test_with_one_episode_per_task_the_interval_is_over_episodes():
    recs = [ep(f"t{i}", 0, i < 5, 1.0, 4) for i in range(12)]
    assert compute_metrics(recs)["success_rate_ci95"] == pytest.approx(list(wilson_ci(5, 12)))


def test_single_run_has_no_at_k_and_sums_token_parts():
    recs = [ep("t1", 0, True, 1.0, 4), ep("t2", 0, False, 0.5, 6)]
    for r in recs:  # no "tokens" field: prompt + completion tokens are used
        del r["tokens"], r["run"]
    m = compute_metrics(recs)
    assert m["runs"] == 1 and "avg_at_k" not in m and "pass_at_k" not in m
    # success 1/2, progress (1 + 0.5) / 2, steps (4 + 6) / 2, tokens (90+10)*2 / 2
    assert (m["success_rate"], m["progress_rate"], m["avg_steps"]) == (0.5, 0.75, 5.0)
    assert m["tokens_per_task"] == 100.0 and m["n_errors"] == 0


def test_empty_and_malformed_records_are_refused():
    with pytest.raises(ValueError, match="no episode records"):
        compute_metrics([])
    bad = ep("t1", 0, True, 1.0, 4)
    del bad["progress"]
    with pytest.raises(ValueError, match="lacks \\['progress'\\]"):
        compute_metrics([bad])


def test_flatten():
    assert flatten({"a": 1, "pd": {"x": {"s": 0.5}}, "ci": [0.1, 0.9]}) == {
        "a": 1, "pd/x/s": 0.5, "ci/0": 0.1, "ci/1": 0.9}


def test_a_repeated_episode_counts_once_and_is_reported():
    """Two processes that wrote one episode twice, and an error episode retried on resume:
    the last record of each counts, the others are reported, never counted."""
    recs = [ep("a", 0, False, 0.0, 3), ep("a", 0, False, 0.0, 3),
            ep("b", 0, False, 0.0, 1, status="error"), ep("b", 0, True, 1.0, 4)]
    m = compute_metrics(recs)
    assert m["n_episodes"] == 2 and m["success_rate"] == 0.5 and m["n_errors"] == 0
    assert m["duplicate_records"] == 1 and m["retried_records"] == 1
    assert m["success_rate_ci95"] == list(wilson_ci(1, 2))


def test_memory_cost_and_invalid_replies_come_from_the_records():
    a, b = ep("a", 0, True, 1.0, 4), ep("b", 0, False, 0.5, 6)
    a["memory_cost"] = {"calls": 4, "entries": 8, "words": 40,
                        "usage": {"rerank": {"calls": 1, "prompt_tokens": 30}},
                        "fallbacks": {"json_invalid": 1}}
    b["memory_cost"] = {"calls": 6, "entries": 4, "words": 60}
    a["invalid_replies"], b["invalid_replies"] = 1, 4
    # a learning run's update cost: the last record carrying it per (agent, run, update) counts
    b["update"] = 0
    b["update_cost"] = {"usage": {"insights": {"completion_tokens": 7}}}
    retried = dict(b, update_cost={"usage": {"insights": {"completion_tokens": 5}}})
    m = compute_metrics([a, b, retried])
    assert m["retrieval_calls"] == 10
    assert m["avg_mem_entries"] == pytest.approx(12 / 10)
    assert m["mem_words_per_call"] == pytest.approx(100 / 10)
    assert m["memory_tokens"] == 30 + 5
    assert m["eval_memory_usage"] == {"rerank": {"calls": 1, "prompt_tokens": 30},
                                      "insights": {"completion_tokens": 5}}
    assert m["eval_memory_fallbacks"] == {"json_invalid": 1}
    assert m["invalid_reply_rate"] == pytest.approx(5 / 10)
