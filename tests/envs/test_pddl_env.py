"""PDDLEnv / PDDLEpisode: reset and step semantics, feedback, meta-actions, config errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core import Env, Episode
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.pddl import (
    CHECK_VALID_ACTIONS,
    INVALID_ACTION_MESSAGE,
    LOOK_AROUND,
    PDDLEnv,
    PDDLEpisode,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env() -> PDDLEnv:
    return PDDLEnv(n_train=3, n_test=3)


def first(env: PDDLEnv, domain: str, split: str = "test") -> Task:
    return next(t for t in env.tasks(split) if t.domain == domain)


def test_protocols(env):
    assert isinstance(env, Env)
    episode = env.open(first(env, "gripper"))
    assert isinstance(episode, Episode) and isinstance(episode, PDDLEpisode)
    assert env.step_budget == 30 and env.name == "pddl"
    assert env.domains() == ["gripper", "blocksworld", "barman", "tyreworld"]


def test_reset_gives_state_goal_and_admissible_actions(env):
    task = first(env, "gripper")
    obs = env.open(task).reset()
    assert obs.goal == task.goal
    assert task.goal.startswith("The goal is to satisfy the following conditions: ball1 is at ")
    assert "Robby is at" in obs.text and task.goal in obs.text
    assert obs.admissible_actions[-1] == CHECK_VALID_ACTIONS
    assert LOOK_AROUND not in obs.admissible_actions  # gripper shows the full state every step
    assert any(a.startswith("move ") for a in obs.admissible_actions)


def test_valid_step_changes_state_and_reports_it(env):
    episode = env.open(first(env, "gripper"))
    obs = episode.reset()
    action = next(a for a in obs.admissible_actions if a.startswith("pick "))
    result = episode.step("  " + action.upper() + " ")
    assert result.feedback.valid_action and result.feedback.state_changed
    assert result.feedback.failure_label is None
    assert "Now true:" in result.observation.text and "Current state:" in result.observation.text
    assert not result.done and result.reward == 0.0


def test_invalid_and_precondition_failures(env):
    episode = env.open(first(env, "blocksworld"))
    episode.reset()
    state = episode.state
    bad = episode.step("dance with b1")
    assert bad.observation.text == INVALID_ACTION_MESSAGE
    assert (bad.feedback.valid_action, bad.feedback.state_changed) == (False, False)
    assert bad.feedback.failure_label == "invalid_action"
    assert episode.step("stack b1 b9").feedback.failure_label == "invalid_action"  # unknown block
    blocked = episode.step("putdown b1")  # the arm is empty
    assert blocked.feedback.failure_label == "precondition"
    assert blocked.observation.text == INVALID_ACTION_MESSAGE
    assert episode.state == state


def test_meta_actions(env):
    episode = env.open(first(env, "tyreworld"))
    obs = episode.reset()
    assert obs.admissible_actions[-2:] == [CHECK_VALID_ACTIONS, LOOK_AROUND]
    listed = episode.step("Check valid actions")
    assert listed.feedback.valid_action and not listed.feedback.state_changed
    assert listed.feedback.failure_label is None
    assert listed.observation.text.startswith("Valid actions are: open boot")
    look = episode.step(LOOK_AROUND)
    assert "boot is closed." in look.observation.text and not look.feedback.state_changed
    step = episode.step("open boot")  # tyreworld reports only the change
    assert step.observation.text == "Now true: boot is open. No longer true: boot is closed."
    # look around exists only where steps do not show the full state
    gripper = env.open(first(env, "gripper"))
    gripper.reset()
    assert gripper.step(LOOK_AROUND).feedback.failure_label == "invalid_action"


def test_progress_is_monotone_and_success_ends_the_episode(env):
    task = first(env, "gripper")
    episode = env.open(task)
    episode.reset()
    progress, undone = [], False
    while not episode.done:
        action = episode.expert_action()
        result = episode.step(action)
        progress.append(result.progress)
        if not undone and result.progress > 0:  # undo a satisfied goal: progress must not drop
            pick = next(a for a in result.observation.admissible_actions if a.startswith("pick "))
            progress.append(episode.step(pick).progress)
            undone = True
    assert progress == sorted(progress) and progress[-1] == 1.0
    assert result.success and result.done and result.reward == 1.0
    after = episode.step("move rooma roomb")
    assert after.done and after.feedback.failure_label == "done"
    assert episode.expert_action() is None


def test_payload_is_json_and_rebuilds_the_episode_anywhere(env):
    task = first(env, "barman", "train")
    data = json.loads(json.dumps(task.payload))
    clone = Task(task.id, task.env, task.split, task.domain, task.goal, data)
    fresh = PDDLEnv(domains=["barman"], n_train=0, n_test=0)  # another process, no tasks built
    a, b = env.open(task).reset(), fresh.open(clone).reset()
    assert a.text == b.text and a.admissible_actions == b.admissible_actions


def test_prompt_describes_every_domain(env):
    prompt = env.prompt()
    for name in ("gripper", "blocksworld", "barman", "tyreworld"):
        assert f"Domain {name}:" in prompt.system
    assert "pour-shaker-to-shot" in prompt.system and "put-on-wheel" in prompt.system
    assert prompt.action_format.startswith("Reply with exactly one action")


def test_hydra_config_instantiates_with_omegaconf_containers():
    cfg = OmegaConf.load(ROOT / "conf" / "env" / "pddl.yaml")
    cfg.n_train, cfg.n_test = 2, 1
    env = instantiate(cfg)
    # generated problems are a stand-in: never named "pddl" (that is AgentBoard's problems)
    assert isinstance(env, PDDLEnv) and env.name == "pddl_generated" and env.step_budget == 30
    assert len(env.tasks("test")) == 4
    cfg.problems_dir = "/data/agentboard/pddl"
    assert cfg.name == "pddl"  # the name follows the data (a resolver in conf/env/pddl.yaml)


def test_require_data_refuses_the_generated_stand_in():
    with pytest.raises(ConfigError) as err:
        PDDLEnv(require_data=True)
    message = str(err.value)
    assert "env.problems_dir" in message and "env.require_data=false" in message
    assert "pddl_generated" in message


def test_every_domain_has_a_worked_example_the_expert_played():
    env = PDDLEnv(n_train=1, n_test=1)
    for task in env.tasks("test"):
        prompt = env.prompt(task)
        (example,) = prompt.fewshot  # the task's own domain only
        assert example.startswith("Task: The goal is to satisfy the following conditions:")
        assert "\n> " in example and prompt.examples() == [example]
    assert PDDLEnv(fewshot=0).prompt(env.tasks("test")[0]).examples() == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"domains": ["gripper", "logistics"]}, r"env\.domains.*logistics"),
        ({"sizes": {"blocksworld": {"blocks": [6, 3]}}}, r"env\.sizes\.blocksworld\.blocks"),
        ({"sizes": {"gripers": {}}}, r"env\.sizes\.gripers"),
        ({"n_test": -1}, r"env\.n_test"),
        ({"step_budget": 0}, r"env\.step_budget"),
        ({"planner": {"strategies": ["astar_lmcut"]}}, r"env\.planner"),
        ({"problem_order": "random", "problems_dir": "."}, r"env\.problem_order"),
    ],
)
def test_bad_config_raises_config_error_naming_the_key(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        PDDLEnv(**kwargs)


def test_train_source_problems_needs_a_problems_dir():
    with pytest.raises(ConfigError, match="env.train_source=problems"):
        PDDLEnv(train_source="problems")
    with pytest.raises(ConfigError, match="env.train_source"):
        PDDLEnv(train_source="random")


def test_an_unknown_key_is_refused():
    with pytest.raises(TypeError, match="colour"):  # the config check names it first
        PDDLEnv(colour="red")


def test_problems_dir_without_domain_files(tmp_path):
    (tmp_path / "gripper").mkdir()
    with pytest.raises(ConfigError, match=r"env\.problems_dir.*gripper\.pddl"):
        PDDLEnv(problems_dir=str(tmp_path), domains=["gripper"])
    with pytest.raises(ConfigError, match="not a folder"):
        PDDLEnv(problems_dir=str(tmp_path / "missing"))


def test_unknown_split(env):
    with pytest.raises(ConfigError, match="valid splits"):
        env.tasks("dev")
