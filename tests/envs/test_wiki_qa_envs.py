"""FEVER and HotpotQA envs: loaders (official files, MemCo's partition, the smoke sets), splits,
config errors, the expert on every smoke task, and `python run.py` on both envs."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hydra.utils import instantiate

from conftest import compose_cfg, run_py
from memarena.core import Env
from memarena.core.errors import ConfigError
from memarena.envs.fever import FeverEnv
from memarena.envs.hotpotqa import HotpotQAEnv
from memarena.envs.wiki import ContextWiki, LocalWiki, smoke_wiki

SMOKE_DATA = Path(__file__).resolve().parents[2] / "src/memarena/envs/wiki/data"


def solve_with_expert(env, split: str = "test") -> list[bool]:
    """Play every task with the env's expert (no noise); return the successes."""
    out = []
    for task in env.tasks(split):
        episode = env.open(task)
        episode.reset()
        for _ in range(env.step_budget):
            result = episode.step(episode.expert_action())
            if result.done:
                break
        out.append(result.success)
    return out


def pairs(columns: dict, first: str, second: str) -> list[list]:
    return [list(p) for p in zip(columns[first], columns[second], strict=True)]


def make(overrides: list[str]):
    cfg = compose_cfg(overrides)
    return instantiate(cfg.env, _convert_="all")


# -- FEVER ---------------------------------------------------------------------------------------
def test_fever_smoke_set_by_default():
    env = make(["env=fever"])
    assert isinstance(env, Env) and env.name == "fever_smoke"
    train, test = env.tasks("train"), env.tasks("test")
    assert len(train) == len(test) == 24
    assert not {t.id for t in train} & {t.id for t in test}
    assert set(env.domains()) == {"A_film_tv", "B_music"}
    assert Counter(t.payload["answer"] for t in test) == {
        "SUPPORTS": 8,
        "REFUTES": 8,
        "NOT ENOUGH INFO": 8,
    }
    assert all(t.payload["synthetic"] for t in test)
    assert test[0].goal.startswith("Claim: ")
    prompt = env.prompt(test[0])
    assert "Search[entity]" in prompt.system and len(prompt.fewshot) == 3
    assert all(solve_with_expert(env, "train")) and all(solve_with_expert(env, "test"))


def test_fever_loader_on_the_shared_dev_file(shared_data):
    dev = shared_data / "gmemory" / "fever_dev.jsonl"
    env = FeverEnv(wiki=ContextWiki(), dataset="official", path=str(dev), name="fever_official")
    test, train = env.tasks("test"), env.tasks("train")
    assert len(test) == 100 and len(train) == 100
    assert test[0].payload["claim_id"] == 91198 and train[0].payload["claim_id"] != 91198
    assert not {t.id for t in test} & {t.id for t in train}
    assert Counter(t.payload["answer"] for t in test) == {
        "REFUTES": 45,
        "SUPPORTS": 29,
        "NOT ENOUGH INFO": 26,
    }
    by_id = {t.payload["claim_id"]: t for t in test}
    assert by_id[137334].payload["gold_titles"] == ["Soul Food (film)"]
    assert by_id[91198].payload["gold_titles"] == []  # NOT ENOUGH INFO
    assert env.domains() == ["fever"]
    smaller = FeverEnv(
        wiki=ContextWiki(), dataset="official", path=str(dev), num_test=10, num_train=5
    )
    assert [t.id for t in smaller.tasks("test")] == [t.id for t in test[:10]]
    assert len(smaller.tasks("train")) == 5


def test_fever_memco_partition_from_memco_files(shared_data):
    folder = shared_data / "memco_partitions" / "fever"
    env = FeverEnv(wiki=ContextWiki(), dataset="memco", partition_path=str(folder))
    train, test = env.tasks("train"), env.tasks("test")
    assert Counter(t.domain for t in train) == {"A_film_tv": 100, "B_music": 100}
    assert Counter(t.domain for t in test) == {"A_film_tv": 30, "B_music": 30}
    assert env.domains() == ["A_film_tv", "B_music"]


@pytest.mark.parametrize("partition", ["memco", "embedding"])
def test_fever_memco_partitions_shipped_with_memarena(shared_data, partition):
    dev = shared_data / "gmemory" / "fever_dev.jsonl"
    env = FeverEnv(wiki=ContextWiki(), dataset="memco", path=str(dev), partition=partition)
    train, test = env.tasks("train"), env.tasks("test")
    assert Counter(t.domain for t in train) == {"A_film_tv": 100, "B_music": 100}
    assert Counter(t.domain for t in test) == {"A_film_tv": 30, "B_music": 30}
    assert not {t.id for t in train} & {t.id for t in test}
    labels = Counter(t.payload["answer"] for t in test)
    if partition == "memco":  # MemCo's own test set (the paper says "balanced"; it is not)
        assert labels == {"SUPPORTS": 27, "REFUTES": 18, "NOT ENOUGH INFO": 15}
        memco = FeverEnv(
            wiki=ContextWiki(),
            dataset="memco",
            partition_path=str(shared_data / "memco_partitions" / "fever"),
        )
        assert [t.id for t in test] == [t.id for t in memco.tasks("test")]
    else:  # ours: 10/10/10 per domain
        assert labels == {"SUPPORTS": 20, "REFUTES": 20, "NOT ENOUGH INFO": 20}


def test_paper_experiments_refuse_the_smoke_set():
    with pytest.raises(ConfigError, match="env.require_data=false"):
        FeverEnv(wiki=smoke_wiki(), require_data=True)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env=fever", "env.dataset=official"], "needs env.path"),
        (["env=fever", "env.dataset=official", "env.path=x.jsonl"], "env/wiki=smoke is the"),
        (["env=fever", "env.dataset=fevr"], "valid: ['smoke', 'official', 'memco']"),
        (["env=fever", "env.partition=ours"], "valid: ['memco', 'embedding']"),
        (["env=fever", "env.num_test=-1"], "env.num_test=-1 must be an int"),
        (["env=fever", "env.dataset=memco", "env/wiki=context"], "needs the official FEVER"),
        (["env=hotpotqa", "env.dataset=distractor"], "needs env.path"),
        (["env=hotpotqa", "env.dataset=fullwiki", "env.path=x.json"], "env/wiki=context is"),
    ],
)
def test_config_mistakes_are_named(overrides, message):
    with pytest.raises(Exception) as info:
        env = make(overrides)
        env.tasks("test")
    err = info.value
    while not isinstance(err, ConfigError) and err.__cause__ is not None:
        err = err.__cause__
    assert isinstance(err, ConfigError) and message in str(err)


def test_unknown_option_is_named():
    with pytest.raises(TypeError, match="nope"):  # the config check names it first
        FeverEnv(wiki=smoke_wiki(), nope=1)


# -- HotpotQA ------------------------------------------------------------------------------------
def test_hotpotqa_smoke_set_in_both_settings():
    env = make(["env=hotpotqa"])
    assert env.name == "hotpotqa_smoke" and env.wiki.name == "context"
    test = env.tasks("test")
    assert len(test) == 16 and len(env.tasks("train")) == 16
    assert set(env.domains()) == {"bridge", "comparison"}
    assert all(solve_with_expert(env))  # distractor: each question's own paragraphs
    fullwiki = make(["env=hotpotqa", "env/wiki=smoke"])
    assert all(solve_with_expert(fullwiki))  # the whole smoke encyclopedia


def test_hotpotqa_loader_on_the_shared_distractor_sample(shared_data, tmp_path):
    sample = shared_data / "hotpotqa_distractor_sample100.json"
    env = HotpotQAEnv(wiki=ContextWiki(), dataset="distractor", path=str(sample), num_test=20)
    test = env.tasks("test")
    assert len(test) == 20 and len(env.tasks("train")) == 80
    assert all(len(t.payload["context"]) == 10 and t.payload["gold_titles"] for t in test)
    # real Wikipedia paragraphs: searching the gold titles then answering solves every question
    assert all(solve_with_expert(env))
    # the official list layout of the same records loads to the same tasks
    records = json.loads(sample.read_text())[:20]
    official = [
        {
            "_id": r["id"],
            "question": r["question"],
            "answer": r["answer"],
            "type": r["type"],
            "level": r["level"],
            "supporting_facts": pairs(r["supporting_facts"], "title", "sent_id"),
            "context": pairs(r["context"], "title", "sentences"),
        }
        for r in records
    ]
    path = tmp_path / "hotpot_dev_distractor_v1.json"
    path.write_text(json.dumps(official))
    again = HotpotQAEnv(wiki=ContextWiki(), dataset="distractor", path=str(path), num_test=20)
    assert [(t.id, t.goal, t.payload) for t in again.tasks("test")] == [
        (t.id, t.goal, t.payload) for t in test
    ]


def test_hotpotqa_bad_file_is_named(tmp_path):
    path = tmp_path / "h.json"
    path.write_text(json.dumps([{"question": "q?"}]))
    env = HotpotQAEnv(wiki=ContextWiki(), dataset="distractor", path=str(path))
    with pytest.raises(ConfigError, match="record 0 lacks"):
        env.tasks("test")


def test_wrong_answers_for_noise():
    env = make(["env=hotpotqa"])
    for task in env.tasks("test"):
        wrong = env.wrong_answers(task)
        assert wrong and task.payload["answer"] not in wrong


# -- python run.py -------------------------------------------------------------------------------
# the seeded expert at epsilon 0.1 on the first 8 test tasks: its noise ends 2 FEVER and 1
# HotpotQA episode with a wrong Finish (the expert alone solves every smoke task)
@pytest.mark.parametrize(("env", "solved"), [("fever", 6), ("hotpotqa", 7)])
def test_run_py_on_the_smoke_sets(env, solved, tmp_path):
    proc = run_py(
        [
            f"env={env}",
            "method=none",
            "backbone=scripted",
            "logger=none",
            "protocol.max_eval_tasks=8",
            f"paths.results_dir={tmp_path}",
            f"paths.cache_dir={tmp_path}/cache",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics_path,) = tmp_path.rglob("metrics.json")
    assert metrics_path.parent.relative_to(tmp_path).parts[1] == f"{env}_smoke"
    metrics = json.loads(metrics_path.read_text())
    assert metrics["n_episodes"] == 8 and metrics["success_rate"] == solved / 8


def test_run_py_on_a_user_corpus(tmp_path):
    corpus = tmp_path / "my_wiki.jsonl"
    shutil.copy(SMOKE_DATA / "smoke_wiki.jsonl", corpus)
    proc = run_py(
        [
            "env=fever",
            "env.wiki=local",
            f"env.wiki.path={corpus}",
            "method=none",
            "backbone=scripted",
            "backbone.epsilon=0",
            "logger=none",
            f"paths.results_dir={tmp_path}",
            f"paths.cache_dir={tmp_path}/cache",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics_path,) = tmp_path.rglob("metrics.json")
    assert json.loads(metrics_path.read_text())["success_rate"] == 1.0
    assert list((tmp_path / "cache" / "wiki").glob("index-*/COMPLETE"))
    assert LocalWiki(path=str(corpus)).search("Vesmira").found
