"""PDDL simulator, action parsing and rendering on this project's domain files."""

from __future__ import annotations

import pytest

from memarena.envs.pddl.render import (
    atom_sentence,
    describe_change,
    goal_text,
    natural_key,
    state_sentences,
)
from memarena.envs.pddl.simulator import GroundedProblem, load_problem, normalize_action
from memarena.envs.pddl.specs import SPECS

GRIPPER_PROBLEM = """
(define (problem tiny) (:domain gripper-strips)
  (:objects rooma roomb ball1 ball2 left right)
  (:init (room rooma) (room roomb) (ball ball1) (ball ball2) (gripper left) (gripper right)
         (at-robby rooma) (free left) (free right) (at ball1 rooma) (at ball2 rooma))
  (:goal (and (at ball1 roomb) (at ball2 roomb))))
"""


@pytest.fixture(scope="module")
def gripper() -> GroundedProblem:
    return load_problem(SPECS["gripper"].domain_pddl(), GRIPPER_PROBLEM)


@pytest.mark.parametrize("domain", sorted(SPECS))
def test_every_domain_file_parses(domain):
    text = SPECS[domain].domain_pddl()
    assert "(define (domain" in text
    assert "AgentBoard" not in text  # written for this project


def test_grounding_is_cached_and_keeps_static_atoms(gripper):
    assert load_problem(SPECS["gripper"].domain_pddl(), GRIPPER_PROBLEM) is gripper
    assert "(room rooma)" in gripper.initial_state  # statics stay in the state (rendered)
    assert "(room rooma)" not in gripper.fluents
    assert gripper.goals == {"(at ball1 roomb)", "(at ball2 roomb)"}


def test_applicable_actions_and_apply(gripper):
    texts = [a.text for a in gripper.applicable(gripper.initial_state)]
    # move rooma rooma is a legal (no-op) grounding of classic gripper
    assert texts == [
        "move rooma rooma",
        "move rooma roomb",
        "pick ball1 rooma left",
        "pick ball1 rooma right",
        "pick ball2 rooma left",
        "pick ball2 rooma right",
    ]
    act = gripper.lookup("pick ball1 rooma left")
    state = act.apply(gripper.initial_state)
    assert "(carry ball1 left)" in state and "(at ball1 rooma)" not in state
    assert "(free left)" not in state


@pytest.mark.parametrize(
    "text",
    [
        "pick ball1 rooma left",
        "  PICK   Ball1 RoomA  left ",
        "(pick ball1 rooma left)",
        "pick ball1, rooma, left.",
    ],
)
def test_action_parsing_is_robust_to_case_and_spacing(gripper, text):
    assert gripper.lookup(text) is gripper.lookup("pick ball1 rooma left") is not None


def test_known_form_separates_preconditions_from_nonsense(gripper):
    assert gripper.is_known_form("pick ball1 roomb left")  # exists, but ball1 is not in roomb
    assert gripper.is_known_form("pick rooma ball1 left")  # static precondition fails
    assert not gripper.is_known_form("pick ball1 rooma")  # wrong arity
    assert not gripper.is_known_form("pick ball9 rooma left")  # unknown object
    assert not gripper.is_known_form("fly to the moon")
    assert normalize_action(" Check  Valid Actions. ") == "check valid actions"


def test_bad_pddl_raises_value_error():
    with pytest.raises(ValueError, match="cannot parse"):
        GroundedProblem(SPECS["gripper"].domain_pddl(), "(define (problem x) (:domain")


def test_sentences_templates_and_fallback():
    assert atom_sentence("(at ball1 roomb)", SPECS["gripper"]) == "ball1 is at roomb."
    assert atom_sentence("(on b2 b1)", SPECS["blocksworld"]) == "b2 is on b1."
    assert (
        atom_sentence("(contains shot1 cocktail1)", SPECS["barman"]) == "shot1 contains cocktail1."
    )
    assert atom_sentence("(inflated r1)", SPECS["tyreworld"]) == "Wheel r1 is inflated."
    assert atom_sentence("(in w1 boot)", SPECS["tyreworld"]) == "w1 is in boot."
    assert atom_sentence("(road c1 c2)", SPECS["gripper"]) == "road is true for c1, c2."
    assert atom_sentence("(raining)", None) == "raining is true."


def test_goal_text_and_state_order():
    goals = ["(at ball10 roomb)", "(at ball2 roomb)"]
    # AgentBoard orders subgoal sentences as plain strings: ball10 before ball2
    assert goal_text(goals, SPECS["gripper"]) == (
        "The goal is to satisfy the following conditions: ball10 is at roomb. ball2 is at roomb."
    )
    # states: changing facts first (template order), arguments in natural order
    sentences = state_sentences(
        ["(room rooma)", "(at ball10 rooma)", "(at ball2 rooma)"], SPECS["gripper"]
    )
    assert sentences == ["ball2 is at rooma.", "ball10 is at rooma.", "rooma is a room."]
    assert natural_key("p2") < natural_key("p10")
    assert describe_change([], [], SPECS["gripper"]) == "Nothing changed."
