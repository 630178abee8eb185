"""Compatibility with AgentBoard's PDDL problems (reference data in ../shared/data).

The 60 problems load through ``env.problems_dir`` with AgentBoard's own domain files, the
expert's plans replayed through the text interface reach progress 1.0, and our goal sentences
equal AgentBoard's subgoals.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memarena.envs.pddl import PDDLEnv
from memarena.envs.pddl.render import goal_sentences

SHARED_DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
PROBLEMS = SHARED_DATA / "agentboard_pddl"
TASK_LIST = SHARED_DATA / "gmemory" / "pddl_test.jsonl"
COUNTS = {"gripper": 20, "blocksworld": 10, "barman": 20, "tyreworld": 10}


def need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"AgentBoard reference data not found at {path.resolve()} (../shared/data)")
    return path


@pytest.fixture(scope="module")
def env() -> PDDLEnv:
    return PDDLEnv(problems_dir=str(need(PROBLEMS)), n_train=2, problem_order="natural")


def test_all_60_problems_load_as_the_test_split(env):
    test = env.tasks("test")
    assert {d: sum(t.domain == d for t in test) for d in COUNTS} == COUNTS
    sources = [t.payload["source"] for t in test if t.domain == "blocksworld"]
    assert sources[:3] == [f"blockworld/problem{i}.pddl" for i in (1, 2, 3)]  # natural order
    assert sources[-1] == "blockworld/problem10.pddl"
    assert test[0].id == "pddl/gripper/test/000"
    # the train split stays generated from this project's domain files
    assert all(t.payload["source"] == "generated" for t in env.tasks("train"))
    assert "domain_pddl" in test[0].payload  # their domain file travels with the task


def test_memco_trains_on_the_same_60_problems():
    """MemCo's PDDL source lists are AgentBoard's test ids 0-59 (train_source=problems)."""
    memco = PDDLEnv(problems_dir=str(need(PROBLEMS)), train_source="problems")
    train, test = memco.tasks("train"), memco.tasks("test")
    assert len(train) == len(test) == 60
    assert [t.payload["source"] for t in train] == [t.payload["source"] for t in test]
    assert {d: sum(t.domain == d for t in train) for d in COUNTS} == COUNTS


def test_expert_plans_replayed_as_text_reach_full_progress(env):
    for task in env.tasks("test"):
        episode = env.open(task)
        episode.reset()
        plan = []
        while not episode.done and len(plan) < 100:
            action = episode.expert_action()
            assert action is not None, f"{task.id}: no plan"
            plan.append(action)
            episode.step(action)
        replay = env.open(task)  # replay the plan as text on a fresh episode
        replay.reset()
        for action in plan:
            result = replay.step(action)
            assert result.feedback.valid_action, f"{task.id}: {action}"
        assert result.progress == 1.0 and result.success, task.id


def test_gripper_goal_sentences_match_agentboard_subgoals(env):
    records = [json.loads(line) for line in need(TASK_LIST).read_text().splitlines()]
    gripper = [r for r in records if r["additional_info"]["subtask"] == "gripper"]
    tasks = [t for t in env.tasks("test") if t.domain == "gripper"]
    assert len(tasks) == len(gripper) == 20
    for task, record in zip(tasks, gripper, strict=True):
        episode = env.open(task)
        assert goal_sentences(episode.problem.goals, episode.spec) == record["subgoals"]
        assert task.goal == record["goal"].strip()


def test_all_goal_sentences_match_in_agentboard_task_order():
    """problem_order=lexicographic reproduces AgentBoard's task indices (problem10 second)."""
    env = PDDLEnv(problems_dir=str(need(PROBLEMS)), problem_order="lexicographic", n_train=0)
    records = [json.loads(line) for line in need(TASK_LIST).read_text().splitlines()]
    tasks = env.tasks("test")
    assert len(tasks) == len(records) == 60
    for task, record in zip(tasks, records, strict=True):
        subtask = record["additional_info"]["subtask"]
        assert task.domain == {"blockworld": "blocksworld"}.get(subtask, subtask)
        assert task.goal == record["goal"].strip(), task.payload["source"]
