"""BFCL v3 multi-turn env on the real bfcl-eval package (API classes and checker)."""

from __future__ import annotations

import importlib.util

import pytest

if importlib.util.find_spec("bfcl_eval") is None:
    pytest.skip(
        "bfcl_eval is not installed (pip install --no-deps bfcl-eval==2025.8.6 mpmath)",
        allow_module_level=True,
    )

from memarena.core.errors import ConfigError
from memarena.envs.bfcl import NEXT, BfclEnv, parse_calls


def _play_expert(env: BfclEnv, task) -> bool:
    ep = env.open(task)
    ep.reset()
    try:
        while (action := ep.expert_action()) is not None:
            result = ep.step(action)
            assert result.feedback.failure_label is None, (task.id, action, result.observation.text)
        return ep.success
    finally:
        ep.close()


def test_split_is_50_150_and_seeded():
    a, b, c = BfclEnv(), BfclEnv(), BfclEnv(seed=1)
    train, test = a.tasks("train"), a.tasks("test")
    assert (len(train), len(test)) == (50, 150)
    ids = {t.payload["id"] for t in train} | {t.payload["id"] for t in test}
    assert len(ids) == 200
    assert [t.id for t in b.tasks("train")] == [t.id for t in train]
    assert [t.id for t in c.tasks("train")] != [t.id for t in train]


@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_miss_func"])
def test_expert_replay_scores_200_of_200(category):
    env = BfclEnv(categories=[category])
    tasks = env.tasks("train") + env.tasks("test")
    assert sum(_play_expert(env, t) for t in tasks) == 200


def test_corrupted_call_fails():
    env = BfclEnv()
    task = next(t for t in env.tasks("test") if t.payload["id"] == "multi_turn_base_0")
    ep = env.open(task)
    ep.reset()
    first = ep.expert_action()
    r = ep.step(first.replace("folder='document'", "folder='archive'"))  # valid, wrong place
    assert r.feedback.valid_action and r.feedback.state_changed
    while (action := ep.expert_action()) is not None:
        r = ep.step(action)
    assert r.done and not r.success and r.reward == 0.0
    assert r.observation.info["checker"]["error_type"] == "multi_turn:instance_state_mismatch"
    ep.close()
    ep = env.open(task)
    ep.reset()
    r = ep.step("[cd(folder='nowhere')]")
    assert r.feedback.failure_label == "execution_error" and not r.feedback.valid_action
    ep.close()


def test_parse_errors_give_invalid_action():
    env = BfclEnv()
    ep = env.open(env.tasks("train")[0])
    ep.reset()
    for bad in ("ls(", "cd folder", "[cd(folder=x)]", "[nosuchfunction()]", "[1, 2]"):
        r = ep.step(bad)
        assert r.feedback.failure_label == "invalid_action", bad
        assert not r.feedback.valid_action and not r.feedback.state_changed and not r.done
    assert ep.calls == [[] for _ in ep.turns]
    ep.close()


def test_parse_calls_and_next_ends_turn():
    assert parse_calls("[cd(folder='x'), ls()]") == ["cd(folder='x')", "ls()"]
    assert parse_calls("sort('a.pdf')") == ["sort('a.pdf')"]
    assert parse_calls("[]") == []
    env = BfclEnv()
    ep = env.open(env.tasks("train")[0])
    ep.reset()
    r = ep.step(NEXT)
    assert r.observation.info["turn"] == 1 and r.observation.text.startswith("User:")
    ep.close()


def test_other_categories_and_bad_options():
    env = BfclEnv(categories=["multi_turn_miss_func", "multi_turn_miss_param"], n_train=5)
    assert len(env.tasks("train")) == 10 and env.domains() == [
        "multi_turn_miss_func",
        "multi_turn_miss_param",
    ]
    assert _play_expert(env, env.tasks("train")[0])
    with pytest.raises(ConfigError):
        BfclEnv(categories=["simple"])
    with pytest.raises(ConfigError):
        BfclEnv(colour="red")
