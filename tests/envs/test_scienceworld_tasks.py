"""ScienceWorld task table, MemCo families and task-list loaders (no JVM needed)."""

from __future__ import annotations

import json

import pytest
from needs import need_module

from memarena.core.errors import ConfigError
from memarena.envs.scienceworld.agentboard import load_agentboard
from memarena.envs.scienceworld.task_lists import load_task_list
from memarena.envs.scienceworld.tasks import (
    FAMILIES,
    TASK_FAMILY,
    TASK_NAMES,
    check_task_names,
    domain_of,
)

MEMCO = "memco_partitions/ScienceWorld/collab_subsets/v4_id_grouped"


def test_ten_families_cover_the_thirty_tasks_once():
    assert len(FAMILIES) == 10
    assert len(TASK_NAMES) == 30 == len(set(TASK_NAMES))
    sizes = {fid: len(ts) for fid, (_, ts) in FAMILIES.items()}
    assert sizes == {
        "1": 4,
        "2": 3,
        "3": 4,
        "4": 4,
        "5": 2,
        "6": 3,
        "7": 3,
        "8": 2,
        "9": 3,
        "10": 2,
    }
    assert len({name for name, _ in FAMILIES.values()}) == 10
    assert domain_of("boil", "memco_families") == "changes_of_state"
    assert domain_of("boil", "task") == "boil"


def test_families_follow_scienceworld_task_ids():
    need_module("scienceworld")
    from scienceworld import constants

    # ScienceWorld's ids are "<family>-<k>"; MemCo groups by the family number.
    by_name = {name: tid for tid, name in constants.ID2TASK.items()}
    assert set(by_name) == set(TASK_NAMES)
    assert all(TASK_FAMILY[n] == tid.split("-")[0] for n, tid in by_name.items())


def test_families_match_memco_manifest(shared_data):
    manifest = json.loads((shared_data / MEMCO / "manifest.json").read_text())
    for fid, specs in manifest["domain_specs"].items():
        assert [s["task_name"] for s in specs] == list(FAMILIES[fid][1])


def test_task_name_errors():
    assert check_task_names(None) == list(TASK_NAMES)
    with pytest.raises(ConfigError, match="valid: "):
        check_task_names(["boil", "bake"])


def test_memco_task_list_loads(shared_data):
    refs = load_task_list(shared_data / MEMCO / "merged__test.json")
    assert len(refs) == 60 and len({r.task_name for r in refs}) == 30
    assert refs[0].task_name == "boil" and refs[0].variation == 21
    assert refs[0].description.startswith("Your task is to boil lead.")


def test_shipped_memco_lists_equal_memco_own_files(shared_data):
    """env.task_list=memco / train_task_list=memco read MemCo's lists shipped in the package."""
    from memarena.envs.scienceworld.env import memco_list

    test = load_task_list(memco_list("memco", "test"))
    train = load_task_list(memco_list("memco", "train"))
    assert len(test) == 60 and len(train) == 290
    assert test == load_task_list(shared_data / MEMCO / "merged__test.json")
    assert memco_list("x.json", "test") == "x.json"


def test_missing_task_list_names_the_option(tmp_path):
    with pytest.raises(ConfigError, match="env.task_list"):
        load_task_list(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"variation_idx": 1}]))
    with pytest.raises(ConfigError, match="sw_task_name"):
        load_task_list(bad)


def test_agentboard_task_list_maps_to_scienceworld_tasks(shared_data):
    path = shared_data / "gmemory" / "sciworld_test.jsonl"
    tasks = load_agentboard(path)
    assert len(tasks) == 90
    assert len({t.task_name for t in tasks}) == 16
    assert all(t.task_name in TASK_FAMILY and t.variation >= 0 and t.subgoals for t in tasks)
    first = tasks[0]
    assert (first.task_name, first.variation) == ("lifespan-longest-lived", 5)
    assert first.subgoals == ("You move to the outside.", "You focus on the crocodile egg.")
    refs = load_task_list(path)  # the env's task_list option accepts the .jsonl as well
    assert [(r.task_name, r.variation) for r in refs] == [(t.task_name, t.variation) for t in tasks]


def test_subgoal_matcher_reads_literal_sentences_and_patterns():
    from memarena.envs.scienceworld.episode import _subgoal_matcher

    temp = _subgoal_matcher("the thermometer measures a temperature of (-?\\d+) degrees celsius")
    assert temp("the thermometer measures a temperature of -12 degrees celsius.")
    assert not temp("the thermometer is cold")
    move = _subgoal_matcher("You move to the outside.")
    assert move("you move to the outside.") and not move("you move to the kitchen.")
    odd = _subgoal_matcher("You focus on the pea plant (in flower pot 2.")  # not a valid regex
    assert odd("you focus on the pea plant (in flower pot 2.")
