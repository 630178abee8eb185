"""AlfWorldEnv on the real engine: generated games of every task type solved by the expert,
reset/step semantics and feedback, splits, official layout, task lists, errors, failures."""

from __future__ import annotations

import json
import os
import random
from importlib.resources import files
from pathlib import Path

import pytest
from needs import module_needs, need_alfworld
from shared_runs import shared_dir

from memarena.core import Env, Episode
from memarena.core.errors import ConfigError
from memarena.envs.alfworld import AlfWorldEnv, AlfWorldEpisode
from memarena.envs.alfworld import generator as gen
from memarena.envs.alfworld.env import worked_examples
from memarena.envs.alfworld.official import game_key, read_task_list
from memarena.envs.alfworld.scenes import SCENES, TASK_TYPES

_needs = module_needs(need_alfworld)

ROOT = Path(__file__).resolve().parents[2]
MEMCO_LISTS = (
    ROOT.parent / "shared" / "data" / "memco_partitions" / "alfworld" / "collab_subsets" / "v3_s"
)
SUITE = {
    "n_train": 1,
    "n_valid_seen": 1,
    "n_valid_unseen": 1,
    "n_layouts": 2,
    "n_heldout_layouts": 1,
    "workers": 2,
}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> AlfWorldEnv:
    # one suite for every worker of the session: the generator's build lock lets one build it
    cache = shared_dir(tmp_path_factory) / "alfworld_env_suite"
    return AlfWorldEnv(data_path=None, cache_dir=str(cache), suite=SUITE)


def _children() -> set[int]:
    path = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def test_protocol_and_splits(env):
    assert isinstance(env, Env) and env.step_budget == 30
    train, seen, unseen = env.tasks("train"), env.tasks("valid_seen"), env.tasks("valid_unseen")
    assert len(train) == len(seen) == len(unseen) == 4  # one game per domain
    assert env.tasks("test") == seen + unseen and env.tasks("held_out") == unseen
    assert {t.domain for t in train} == set(env.domains())
    scenes = {
        s: {t.payload["scene"] for t in env.tasks(s)}
        for s in ("train", "valid_seen", "valid_unseen")
    }
    assert not scenes["valid_unseen"] & scenes["train"]  # held-out layouts never in train
    assert scenes["valid_seen"] <= scenes["train"]  # familiar layouts are train layouts
    keys = [t.payload["key"] for s in ("train", "valid_seen", "valid_unseen") for t in env.tasks(s)]
    assert len(set(keys)) == len(keys)
    with pytest.raises(ConfigError, match="valid splits"):
        env.tasks("dev")


def test_reset_step_feedback(env):
    task = env.tasks("train")[0]
    ep = env.open(task)
    assert isinstance(ep, Episode)
    obs = ep.reset()
    assert "Your task is to:" in obs.text and obs.goal == task.goal
    assert all(isinstance(a, str) for a in obs.admissible_actions)
    assert {"look", "inventory"} <= set(obs.admissible_actions)  # always admissible
    r = ep.step("fly to the moon")
    assert r.observation.text == "Nothing happens."
    assert (r.feedback.valid_action, r.feedback.state_changed, r.feedback.failure_label) == (
        False,
        False,
        "invalid_action",
    )
    r = ep.step("take nothing 9 from nowhere 9")
    assert r.feedback.failure_label == "precondition" and not r.done
    r = ep.step("look")
    assert r.feedback.valid_action and not r.feedback.state_changed
    go = next(a for a in r.observation.admissible_actions if a.startswith("go to "))
    r = ep.step(go)
    assert r.feedback.valid_action and r.feedback.state_changed
    ep.close()


def test_put_alias_and_progress(env):
    task = next(t for t in env.tasks("train") if t.payload["task_family"] == "pick_and_place")
    ep = env.open(task)
    ep.reset()
    seen, last = [], 0.0
    while (a := ep.expert_action()) is not None:
        if a.startswith("move "):
            obj, rec = a[5:].split(" to ")
            a = f"put {obj} in/on {rec}"  # G-Memory / alfworld<0.4 wording
        r = ep.step(a)
        assert r.progress >= last
        last = r.progress
        seen.append(r.progress)
        if r.done:
            break
    assert r.success and r.reward == 1.0 and r.progress == 1.0
    assert 0.5 in seen  # holding the target is the first subgoal
    r = ep.step("look")
    assert r.done and r.feedback.failure_label == "done"
    ep.close()


def _walk_transcript(env: AlfWorldEnv) -> list:
    """The expert's walk through a train game: every observation, admissible list and reward."""
    ep = env.open(env.tasks("train")[0])
    obs = ep.reset()
    transcript = [(obs.text, obs.admissible_actions)]
    while (a := ep.expert_action()) is not None:
        r = ep.step(a)
        transcript.append((a, r.observation.text, r.observation.admissible_actions, r.reward))
        if r.done:
            break
    ep.close()
    return transcript


def test_remembered_parses_and_translations_give_textworlds_own_observations(env):
    from memarena.envs.alfworld.engine import plain_parsers

    remembered = _walk_transcript(env)
    with plain_parsers():
        plain = _walk_transcript(env)
    assert len(plain) > 3 and remembered == plain


# where the search for a game the expert solves within 50 steps starts: the generator's first
# such candidate of the type (found by searching from 0; for pick_two_obj_and_place 16 earlier
# candidates fail, a minute of expert walks that this test does not need to repeat)
FIRST_SOLVABLE = {"pick_two_obj_and_place": 16}


@pytest.mark.parametrize("short", list(TASK_TYPES))  # ~10 s per task type, in the default run
def test_expert_solves_every_task_type(short, tmp_path):
    domain = next(d for d, s in SCENES.items() if short in s.task_types)
    first = FIRST_SOLVABLE.get(short, 0)
    for attempt in range(first, first + 20):
        rng = random.Random(f"t/{short}/{attempt}")
        layout = gen.make_layout(0, domain, attempt % 4)
        built = gen.build_game(rng, domain, 1, layout, short)
        if built is None:
            continue
        game_dir = tmp_path / f"g{attempt}" / "trial_0"
        gen._write(game_dir, *built)
        walk = gen.expert_walkthrough(game_dir, 50, "x")
        if walk is None:
            continue
        from memarena.core.types import Task

        payload = {
            "game_file": str(game_dir / "game.tw-pddl"),
            "task_type": TASK_TYPES[short],
            "pddl_params": built[1]["pddl_params"],
            "expert_seed": "x",
        }
        ep = AlfWorldEpisode(Task("t", "alfworld", "train", domain, "g", payload))
        ep.reset()
        for _ in range(len(walk) + 1):
            r = ep.step(ep.expert_action())
            if r.done:
                break
        assert r.success and r.progress == 1.0
        ep.close()
        return  # one game per type
    pytest.fail(f"no solvable {short} game in 20 attempts")


@pytest.mark.slow  # ~40 s
def test_generation_is_deterministic(tmp_path):
    spec = gen.SuiteSpec(("bathroom",), tuple(TASK_TYPES), 2, 1, 1, 3, 1, 5, 30)
    a = gen.generate_suite(spec, tmp_path / "a", workers=1)
    b = gen.generate_suite(spec, tmp_path / "b", workers=2)
    ma, mb = (json.loads((p / "suite.json").read_text())["games"] for p in (a, b))
    assert ma == mb
    g = ma["train"][0]
    assert (a / g / "game.tw-pddl").read_text() == (b / g / "game.tw-pddl").read_text()
    game = json.loads((a / g / "game.tw-pddl").read_text())
    assert game["solvable"] and game["walkthrough"] and "(:goal" in game["pddl_problem"]


def test_official_layout_and_task_list(env, tmp_path):
    suite_dir = Path(env.tasks("train")[0].payload["game_file"]).parents[3]
    official = tmp_path / "data"
    official.mkdir()
    (official / "json_2.1.1").symlink_to(suite_dir)
    other = AlfWorldEnv(data_path=str(official), cache_dir=str(tmp_path / "unused"))
    assert [t.payload["key"] for t in other.tasks("train")] == [
        t.payload["key"] for t in env.tasks("train")
    ]
    assert not (tmp_path / "unused").exists()  # official data: nothing generated
    # a MemCo-style list selects and orders games
    picked = [t.payload["key"] for t in env.tasks("valid_unseen")][::-1][:2]
    entries = [
        {
            "scene_domain": "kitchen",
            "env_kwargs": {"gamefile": f"data/alfworld/json_2.1.1/{k}/game.tw-pddl"},
        }
        for k in picked
    ]
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "kitchen__valid_unseen.json").write_text(json.dumps(entries))
    listed = AlfWorldEnv(
        data_path=str(official),
        task_list=str(tmp_path / "lists"),
        domains=["kitchen", "living_room", "bedroom", "bathroom"],
    )
    assert [t.payload["key"] for t in listed.tasks("valid_unseen")] == picked  # the list's order
    assert listed.tasks("train") == []


def test_memco_task_lists_parse():
    if not MEMCO_LISTS.exists():
        pytest.fail(f"MemCo task lists not found at {MEMCO_LISTS} (../shared beside the checkout)")
    lists = read_task_list(MEMCO_LISTS)
    assert set(lists) == {"train", "valid_seen", "valid_unseen"}
    # MemCo Appendix F.1: train / Familiar / Held-out per scene domain
    paper = {
        "kitchen": (100, 20, 20),
        "living_room": (100, 17, 11),
        "bedroom": (100, 20, 20),
        "bathroom": (100, 20, 19),
    }
    for domain, counts in paper.items():
        got = tuple(
            sum(d == domain for _, d in lists[s]) for s in ("train", "valid_seen", "valid_unseen")
        )
        assert got == counts, domain
    domains = {d for entries in lists.values() for _, d in entries}
    assert domains == {"kitchen", "living_room", "bedroom", "bathroom"}
    for split, entries in lists.items():
        assert all(k.startswith(split + "/") for k, _ in entries)
    assert (
        game_key(
            "x/json_2.1.1/train/pick_and_place_simple-Candle-None-Cart-401/trial_T1/game.tw-pddl"
        )
        == "train/pick_and_place_simple-Candle-None-Cart-401/trial_T1"
    )


def test_engine_import_keeps_alfworld_data_unset(env, monkeypatch):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    ep = env.open(env.tasks("train")[0])
    ep.reset()
    ep.close()
    assert "ALFWORLD_DATA" not in os.environ  # alfworld's import would set it


def test_missing_data_and_bad_options(tmp_path):
    with pytest.raises(ConfigError, match="ALFWORLD_DATA or env.data_path"):
        AlfWorldEnv(data_path=str(tmp_path / "nope"))
    with pytest.raises(TypeError, match="colour"):  # the config check names it first
        AlfWorldEnv(colour="red")
    with pytest.raises(ConfigError, match="task_types"):
        AlfWorldEnv(task_types=["juggle"])
    with pytest.raises(ConfigError, match="task_list"):
        AlfWorldEnv(task_list=str(tmp_path / "none.json"))


def test_engine_failure_raises_and_no_processes(env):
    before = _children()
    ep = env.open(env.tasks("train")[1])
    ep.reset()

    def broken(_command):
        raise OSError("engine died")

    ep._env.step = broken  # the engine breaks mid-episode
    with pytest.raises(RuntimeError, match="ALFWorld engine failed"):
        ep.step(ep.admissible_actions()[0])
    ep.close()
    with pytest.raises(RuntimeError, match="closed"):
        ep.step("look")
    assert _children() <= before  # the engine runs in-process: nothing left behind


def test_shipped_memco_lists_equal_memco_own_files():
    """env.task_list=memco: MemCo's lists shipped in the package, the same games in the same
    order as its own files (scripts/prepare_memco_lists.py made them), Appendix F.1 counts."""
    shipped = read_task_list(
        Path(str(files("memarena.envs.alfworld") / "data" / "memco_task_lists.json"))
    )
    counts = {s: len(v) for s, v in shipped.items()}
    assert counts == {"train": 400, "valid_seen": 77, "valid_unseen": 70}
    if MEMCO_LISTS.exists():
        assert shipped == read_task_list(MEMCO_LISTS)


def test_paper_runs_refuse_the_suite_and_the_suite_has_its_own_name(tmp_path):
    with pytest.raises(ConfigError) as err:
        AlfWorldEnv(require_data=True, cache_dir=str(tmp_path))
    assert "ALFWORLD_DATA" in str(err.value) and "alfworld_suite" in str(err.value)
    from conftest import compose_cfg  # noqa: PLC0415

    assert compose_cfg(["env=alfworld", "env.data_path=null"]).env.name == "alfworld_suite"
    assert compose_cfg(["env=alfworld", "env.data_path=/data/a"]).env.name == "alfworld"


def test_prompt_shows_the_worked_example_of_the_task_type(env):
    for task in env.tasks("train")[:8]:
        prompt = env.prompt(task)
        assert len(prompt.fewshot) == 6  # one per task type ships
        (shown,) = prompt.examples()  # env.fewshot = 1: the task's own type first
        assert shown == worked_examples()[task.payload["task_family"]]
        assert shown.startswith("Task: Your task is to:") and "\n> " in shown
    assert len(env.prompt(env.tasks("train")[0]).examples("all")) == 6


def test_prompt_and_config(env):
    p = env.prompt(env.tasks("train")[0])
    assert "move <object> to <receptacle>" in p.system and "one action" in p.action_format
    from conftest import compose_cfg  # noqa: PLC0415

    cfg = compose_cfg(["env=alfworld"])
    assert cfg.env._target_ == "memarena.envs.alfworld.AlfWorldEnv" and cfg.env.step_budget == 30


def test_the_suite_fallback_is_a_warning_naming_the_suite_and_the_flag(env, caplog):
    """Without the official data the run plays the household suite: said at WARNING, with the
    suite's name and the metrics flag (issue 51, 6; it was an INFO line)."""
    fresh = AlfWorldEnv(name="alfworld_suite", data_path=None, cache_dir=str(env.cache_dir),
                        suite=SUITE)  # fmt: skip
    with caplog.at_level("INFO", logger="memarena"):
        fresh.tasks("train")
    (record,) = [r for r in caplog.records if "household suite at" in r.getMessage()]
    assert record.levelname == "WARNING" and fresh.stand_in
    assert "alfworld_suite" in record.getMessage() and "stand_in_data" in record.getMessage()
