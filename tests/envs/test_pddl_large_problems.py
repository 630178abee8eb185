"""The PDDL expert on problems of hundreds of objects (issue 36 item 10): a 300-ball gripper
ran the portfolio for more than 5 minutes without a word. A problem over the planner's
``large_size`` is planned by enforced hill climbing alone, whose work grows with the plan's
length; when that fails too, the warning names the problem's size. Problems of the default
sizes keep the portfolio, so their plans do not change."""

from __future__ import annotations

import logging
import random
from pathlib import Path

from memarena.envs.pddl.generators import DEFAULT_SIZES, _gripper, generate_splits, problem_pddl
from memarena.envs.pddl.planner import Expert, PlannerConfig
from memarena.envs.pddl.simulator import load_problem

DOMAINS = Path(__file__).resolve().parents[2] / "src/memarena/envs/pddl/domains"


def _gripper_problem(balls: int):
    objects, init, goal, _ = _gripper(random.Random(0), {"balls": (balls, balls), "rooms": (2, 2)})
    text = problem_pddl("gripper", f"gripper-{balls}", objects, init, goal)
    return load_problem((DOMAINS / "gripper.pddl").read_text(), text)


def test_a_300_ball_gripper_is_planned_to_its_goal():
    problem = _gripper_problem(300)
    expert = Expert(problem, PlannerConfig())
    assert expert.large  # 2,402 ground actions x 300 goal atoms
    result = expert.plan(problem.initial_state)
    assert result.strategy == "ehc_ff" and result.actions
    state = problem.initial_state
    for text in result.actions:  # every action applicable in turn, and the goal at the end
        action = problem.lookup(text)
        assert action is not None and action.pre <= state, text
        state = action.apply(state)
    assert problem.goals <= state
    # the episode's expert answers from the plan it cached
    assert expert.next_action(problem.initial_state, search=False) == result.actions[0]


def test_a_large_problem_the_expert_cannot_plan_fails_fast_naming_its_size(caplog):
    problem = _gripper_problem(300)
    config = PlannerConfig.build(["bfs", "wastar_ff"], {"ehc_ff": 20})  # 20 evaluations
    expert = Expert(problem, config)
    with caplog.at_level(logging.WARNING, logger="memarena.envs.pddl.planner"):
        result = expert.plan(problem.initial_state)
    assert result.actions is None and result.expansions == 20  # the portfolio never ran
    (record,) = [r for r in caplog.records if "found no plan" in r.getMessage()]
    said = record.getMessage()
    assert "304 objects, 2402 ground actions, 300 goal atoms: size 720600" in said
    assert "large_size 10000" in said


def test_problems_of_the_default_sizes_keep_the_portfolio():
    for domain in DEFAULT_SIZES:
        domain_text = (DOMAINS / f"{domain}.pddl").read_text()
        splits = generate_splits(domain, 10, 10, 0, DEFAULT_SIZES[domain])
        for generated in splits["test"] + splits["train"]:
            expert = Expert(load_problem(domain_text, generated.pddl), PlannerConfig())
            assert not expert.large, (generated.name, expert.described)
