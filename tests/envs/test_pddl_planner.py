"""The expert: solves generated problems of every domain, replans after deviations, and gives
the same plans in every process."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from memarena.core.types import Task
from memarena.envs.pddl import PDDLEnv, PDDLEpisode
from memarena.envs.pddl.planner import PlannerConfig, get_expert
from memarena.envs.pddl.simulator import load_problem
from memarena.envs.pddl.specs import SPECS

N_PER_DOMAIN = 5


@pytest.fixture(scope="module")
def env() -> PDDLEnv:
    return PDDLEnv(n_train=N_PER_DOMAIN, n_test=N_PER_DOMAIN)


def play_expert(episode, max_steps: int = 200) -> int:
    episode.reset()
    steps = 0
    while not episode.done and steps < max_steps:
        result = episode.step(episode.expert_action())
        assert result.feedback.valid_action and result.feedback.state_changed
        steps += 1
    return steps


@pytest.mark.parametrize("domain", ["gripper", "blocksworld", "barman", "tyreworld"])
def test_expert_solves_generated_problems(env, domain):
    for task in [t for t in env.tasks("test") if t.domain == domain]:
        episode = env.open(task)
        steps = play_expert(episode)
        assert episode.done and episode.progress == 1.0, task.id
        assert steps <= env.step_budget, f"{task.id}: expert needs {steps} steps"


def test_expert_replans_after_a_deviation(env):
    task = next(t for t in env.tasks("train") if t.domain == "gripper")
    episode = env.open(task)
    episode.reset()
    planned = episode.expert_action()
    for action in episode.admissible_actions():
        if action != planned and episode.problem.lookup(action) is not None:
            if episode.step(action).feedback.state_changed:
                break  # off the plan now
    steps = 0
    while not episode.done and steps < 100:
        episode.step(episode.expert_action())
        steps += 1
    assert episode.done
    assert get_expert(episode.problem, episode.planner).stats.searches >= 2


def test_no_plan_within_limits_gives_none(env):
    task = next(t for t in env.tasks("test") if t.domain == "barman")
    episode = env.open(task)
    episode.reset()
    episode.planner = PlannerConfig.build(["bfs"], {"bfs": 1})
    assert episode.expert_action() is None


PLAN_SCRIPT = """
from memarena.envs.pddl import PDDLEnv
env = PDDLEnv(n_train=0, n_test=2)
out = []
for task in env.tasks("test"):
    ep = env.open(task)
    ep.reset()
    while not ep.done:
        a = ep.expert_action()
        out.append(a)
        ep.step(a)
print("|".join(out))
"""


def test_plans_do_not_depend_on_hash_seed():
    runs = []
    for seed in ("1", "2"):
        proc = subprocess.run(
            [sys.executable, "-c", PLAN_SCRIPT],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(proc.stdout)
    here: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(PLAN_SCRIPT, here)  # the same plans in this process, under its own hash seed
    assert runs[0] == runs[1] == printed.getvalue()
    assert len(here["out"]) == 110  # the expert's steps on 2 test problems of each of 4 domains


DEAD_END_BARMAN = """
(define (problem dead-end) (:domain barman)
  (:objects shaker1 - shaker left right - hand shot1 shot2 shot3 - shot
            ingredient1 ingredient2 ingredient3 - ingredient cocktail1 - cocktail
            dispenser1 dispenser2 dispenser3 - dispenser l0 l1 l2 - level)
  (:init (ontable shaker1) (ontable shot1) (ontable shot2) (ontable shot3)
         (dispenses dispenser1 ingredient1) (dispenses dispenser2 ingredient2)
         (dispenses dispenser3 ingredient3)
         (clean shaker1) (clean shot1) (clean shot2) (clean shot3)
         (empty shaker1) (empty shot1) (empty shot2) (empty shot3)
         (handempty left) (handempty right)
         (shaker-empty-level shaker1 l0) (shaker-level shaker1 l0) (next l0 l1) (next l1 l2)
         (cocktail-part1 cocktail1 ingredient1) (cocktail-part2 cocktail1 ingredient2))
  (:goal (and (contains shot1 cocktail1))))
"""


def test_expert_gives_up_once_in_a_dead_end():
    """Ingredients 1 and 3 in the only shaker make no cocktail: it can never be emptied."""
    problem = load_problem(SPECS["barman"].domain_pddl(), DEAD_END_BARMAN)
    config = PlannerConfig.build(["agenda_add"], {"agenda_add": 300}, repair_limit=200)
    task = Task("pddl/barman/test/dead", "pddl", "test", "barman", "", {})
    episode = PDDLEpisode(task, problem, SPECS["barman"], config)
    episode.reset()
    assert episode.expert_action() is not None  # solvable at the start
    for action in [
        "grasp left shot2",
        "fill-shot shot2 ingredient1 left right dispenser1",
        "pour-shot-to-clean-shaker shot2 ingredient1 shaker1 left l0 l1",
        "leave left shot2",
        "grasp left shot3",
        "fill-shot shot3 ingredient3 left right dispenser3",
        "pour-shot-to-used-shaker shot3 ingredient3 shaker1 left l1 l2",
    ]:
        assert episode.step(action).feedback.state_changed, action
    expert = get_expert(problem, config)
    assert episode.expert_action() is None
    searches = expert.stats.searches
    episode.step("leave left shot3")
    assert episode.expert_action() is None
    assert expert.stats.searches == searches  # no new search after giving up
