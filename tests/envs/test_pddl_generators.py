"""Seeded generators: deterministic, within their size ranges, train/test disjoint."""

from __future__ import annotations

import pytest

from memarena.core.errors import ConfigError
from memarena.envs.pddl import PDDLEnv
from memarena.envs.pddl.generators import (
    DEFAULT_SIZES,
    canonical_key,
    generate_split,
    generate_splits,
    resolve_sizes,
)
from memarena.envs.pddl.simulator import load_problem
from memarena.envs.pddl.specs import SPECS

DOMAINS = sorted(SPECS)


@pytest.mark.parametrize("domain", DOMAINS)
def test_generation_is_deterministic_per_seed(domain):
    sizes = resolve_sizes(domain, None)
    a = generate_splits(domain, 10, 5, seed=3, sizes=sizes)
    b = generate_splits(domain, 10, 5, seed=3, sizes=sizes)
    c = generate_splits(domain, 10, 5, seed=4, sizes=sizes)
    assert [p.pddl for p in a["train"] + a["test"]] == [p.pddl for p in b["train"] + b["test"]]
    assert [p.key for p in a["test"]] != [p.key for p in c["test"]]


@pytest.mark.parametrize("domain", DOMAINS)
def test_splits_are_disjoint_distinct_and_parse(domain):
    sizes = resolve_sizes(domain, None)
    splits = generate_splits(domain, 30, 15, seed=0, sizes=sizes)
    train = {p.key for p in splits["train"]}
    test = {p.key for p in splits["test"]}
    assert len(train) == 30 and len(test) == 15
    assert not train & test
    for p in splits["train"][:5] + splits["test"][:5]:
        problem = load_problem(SPECS[domain].domain_pddl(), p.pddl)
        assert problem.goals == set(p.goal)
        assert not problem.goals <= problem.initial_state  # never solved at the start
        for knob, value in p.size.items():
            lo, hi = sizes[knob]
            assert lo <= value <= hi


def test_test_split_does_not_depend_on_n_train():
    sizes = resolve_sizes("gripper", None)
    a = generate_splits("gripper", 5, 8, seed=0, sizes=sizes)
    b = generate_splits("gripper", 50, 8, seed=0, sizes=sizes)
    assert [p.key for p in a["test"]] == [p.key for p in b["test"]]


def test_sizes_override_and_validation():
    sizes = resolve_sizes("gripper", {"balls": [5, 5], "rooms": 2})
    for p in generate_split("gripper", "train", 5, 0, sizes):
        assert p.size == {"balls": 5, "rooms": 2}
    with pytest.raises(ConfigError, match=r"env\.sizes\.gripper\.balls"):
        resolve_sizes("gripper", {"balls": [6, 4]})
    with pytest.raises(ConfigError, match=r"env\.sizes\.gripper\.wheels"):
        resolve_sizes("gripper", {"wheels": [1, 2]})
    with pytest.raises(ConfigError, match="rooms"):
        resolve_sizes("gripper", {"rooms": [1, 2]})
    with pytest.raises(ConfigError, match="cocktails"):
        resolve_sizes("barman", {"ingredients": 2, "cocktails": [1, 3]})
    assert set(DEFAULT_SIZES) == set(SPECS)


def test_too_many_problems_for_the_size_range_is_a_config_error():
    sizes = resolve_sizes("tyreworld", {"wheels": 1})  # only 7 distinct goal subsets exist
    with pytest.raises(ConfigError, match="n_train"):
        generate_split("tyreworld", "train", 20, 0, sizes)


def test_env_tasks_ids_domains_and_disjointness():
    env = PDDLEnv(n_train={"gripper": 6, "barman": 4}, n_test=3, domains=["gripper", "barman"])
    train, test = env.tasks("train"), env.tasks("test")
    assert env.domains() == ["gripper", "barman"]
    assert [t.id for t in test] == [
        f"pddl/{d}/test/{i:03d}" for d in ("gripper", "barman") for i in range(3)
    ]
    assert sum(t.domain == "gripper" for t in train) == 6
    assert sum(t.domain == "barman" for t in train) == 4

    def content(tasks):
        return {
            canonical_key(p.initial_state, p.goals) for p in (env.open(t).problem for t in tasks)
        }

    assert not content(train) & content(test)
    assert all(t.split == "test" and t.env == "pddl" for t in test)
