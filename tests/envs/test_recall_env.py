"""RecallEnv / RecallEpisode (issue 52): seeded generation, what train and test tasks show, the
step semantics that make a guess fail, the two distractor levels, config errors."""

from __future__ import annotations

import random

import pytest

from memarena.core.errors import ConfigError
from memarena.envs.recall import RecallEnv
from memarena.envs.recall.generator import DOMAINS


@pytest.fixture(scope="module")
def env() -> RecallEnv:
    return RecallEnv(seed=3)


def by_family(tasks):
    return {t.payload["family"]: t for t in tasks}


def test_generation_is_seeded(env):
    again = RecallEnv(seed=3)
    assert [(t.id, t.goal, t.payload) for t in env.tasks("test")] == [
        (t.id, t.goal, t.payload) for t in again.tasks("test")
    ]
    other = RecallEnv(seed=4)
    codes = {tuple(t.payload["code"]) for t in env.tasks("test")}
    assert codes.isdisjoint({tuple(t.payload["code"]) for t in other.tasks("test")})
    # 2 domains x 3 devices; 2 training tasks and 1 test task per device
    assert len(env.tasks("train")) == 12 and len(env.tasks("test")) == 6
    assert env.domains() == ["vault", "terminal"]


def test_test_tasks_repeat_training_procedures_under_new_surface_forms(env):
    train, test = env.tasks("train"), by_family(env.tasks("test"))
    for t in train:
        u = test[t.payload["family"]]
        assert u.payload["code"] == t.payload["code"] and u.payload["device"] in u.goal
        assert u.goal != t.goal and u.payload["place"] != t.payload["place"]
        assert t.domain == u.domain
    first_obs = {t.id: env.open(t).reset().text for t in train + list(test.values())}
    for t in train:  # the note shows the first stage's action on training tasks only
        assert f'stage one is "{t.payload["code"][0]}"' in first_obs[t.id]
    for u in test.values():
        assert "note reads" not in first_obs[u.id]
        assert not any(a in first_obs[u.id] for a in u.payload["code"])


def test_the_code_opens_the_device_and_a_wrong_action_locks_it(env):
    task = env.tasks("test")[0]
    code = task.payload["code"]
    episode = env.open(task)
    obs = episode.reset()
    assert code[0] in obs.admissible_actions and len(obs.admissible_actions) == 4
    for i, action in enumerate(code):
        assert episode.expert_action() == action
        result = episode.step(action)
        assert result.feedback.valid_action and result.feedback.state_changed
        assert result.progress == pytest.approx((i + 1) / len(code))
    assert result.done and result.success and result.reward == 1.0

    episode = env.open(task)
    episode.reset()
    assert episode.step(code[0]).done is False
    not_offered = episode.step("dance a jig")  # not an offered action: nothing happens
    assert not not_offered.done and not_offered.feedback.failure_label == "invalid_action"
    wrong = next(a for a in episode.options[1] if a != code[1])
    result = episode.step(wrong)
    assert result.done and not result.success and result.progress == pytest.approx(1 / 3)
    assert result.feedback.failure_label == "wrong_step" and result.feedback.valid_action


def test_random_guessing_is_at_chance():
    env = RecallEnv(seed=0, families=8, code_length=2, options=3, n_test=20)
    rng = random.Random(0)
    wins = 0
    tasks = env.tasks("test")
    for task in tasks:
        episode = env.open(task)
        obs, result = episode.reset(), None
        while result is None or not result.done:
            result = episode.step(rng.choice(obs.admissible_actions))
            obs = result.observation
        wins += result.success
    records = [{"task_id": t.id} for t in tasks]
    assert env.run_metrics(records)["chance_success"] == pytest.approx(1 / 9)
    assert abs(wins / len(tasks) - 1 / 9) < 0.05  # 320 tasks: 2 standard errors ~ 0.035


def test_distractor_levels():
    easy, hard = RecallEnv(seed=1, distractors="random"), RecallEnv(seed=1, distractors="code")
    for env in (easy, hard):
        tasks = env.tasks("test")
        in_codes = {a for t in tasks for a in t.payload["code"]}
        for t in tasks:
            for stage, options in enumerate(t.payload["options"]):
                wrong = [a for a in options if a != t.payload["code"][stage]]
                assert len(wrong) == 3 and set(options) <= set(DOMAINS[t.domain][1])
                if env is easy:  # no distractor occurs in any code: any memory helps
                    assert not set(wrong) & in_codes
                else:  # every distractor comes from a code: only the right episode helps
                    assert set(wrong) <= in_codes


def test_prompt_shows_a_practice_device_of_the_task_domain(env):
    task = next(t for t in env.tasks("test") if t.domain == "terminal")
    prompt = env.prompt(task)
    assert prompt.examples() == prompt.fewshot[:1] and "practice terminal" in prompt.fewshot[0]
    assert len(prompt.fewshot) == 2 and "opens." in prompt.fewshot[0]


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"distractors": "hard"}, "env.distractors"),
        ({"domains": ["kitchen"]}, "env.domains"),
        ({"families": 9, "code_length": 3}, "env.families"),
        ({"code_length": [4, 2]}, "env.code_length"),
        ({"options": 1}, "env.options"),
    ],
)
def test_config_errors_name_the_key(kwargs, names):
    with pytest.raises(ConfigError, match=names.replace(".", r"\.")):
        RecallEnv(**kwargs)
