"""BFCL's task split: ReMe's released ids (``env.split=reme``) and the seeded shuffle
(``env.split=shuffled``); ReMe's BFCL experiment files run ReMe's ids with thinking on."""

from __future__ import annotations

import ast
import importlib.util
import json
import random
from pathlib import Path

import pytest
from hydra.utils import instantiate
from needs import module_needs

from conftest import CONF, ROOT, compose_cfg
from memarena.config_check import group_options
from memarena.core.errors import ConfigError
from memarena.envs.bfcl import BfclEnv
from memarena.envs.bfcl.env import REME_IDS, THINKING_MAX_TOKENS, reme_ids
from memarena.pipeline.validate import validate

_needs = module_needs("bfcl_eval")

# ReMe's benchmark/bfcl/default_ids.py at the commit the data file names, copied as test data
DEFAULT_IDS = ROOT / "tests" / "data" / "reme_26cb5ca6_default_ids.py.txt"
BFCL_EXPERIMENTS = [
    e
    for e in group_options(CONF, "experiment")
    if e.startswith("reme_")
    and any(  # the env override in the file or in its base (conf/experiment/base/reme_bfcl.yaml)
        line in (CONF / "experiment" / f"{e}.yaml").read_text()
        for line in ("override /env: bfcl", "- base/reme_bfcl")
    )
]


def _sets(path: Path) -> dict[str, set[str]]:
    """The two set literals of a default_ids.py, read with ast (never imported)."""
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign):
            out[node.target.id] = set(ast.literal_eval(node.value))
    return out


def _index(entry_id: str) -> int:
    return int(entry_id.rsplit("_", 1)[1])


def test_shipped_ids_are_remes_default_ids():
    sets = _sets(DEFAULT_IDS)
    assert (len(sets["DEFAULT_TRAIN_IDS"]), len(sets["DEFAULT_VAL_IDS"])) == (50, 150)
    shipped = json.loads(REME_IDS.read_text())
    assert shipped["source"]["commit"] == "26cb5ca6"
    assert shipped["source"]["path"] == "benchmark/bfcl/default_ids.py"
    assert set(shipped["train"]) == sets["DEFAULT_TRAIN_IDS"]
    assert set(shipped["test"]) == sets["DEFAULT_VAL_IDS"]
    for split in ("train", "test"):  # sorted by entry index, no repeats
        assert shipped[split] == sorted(set(shipped[split]), key=_index)
    assert reme_ids() == {"train": tuple(shipped["train"]), "test": tuple(shipped["test"])}


def test_the_script_reads_the_shipped_lists():
    path = ROOT / "scripts" / "reme_bfcl_ids.py"
    spec = importlib.util.spec_from_file_location("reme_bfcl_ids", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.read_id_sets(DEFAULT_IDS) == {k: list(v) for k, v in reme_ids().items()}


def test_split_reme_is_exactly_remes_train_and_val_ids():
    env = BfclEnv(split="reme")
    sets = _sets(DEFAULT_IDS)
    train = [t.payload["id"] for t in env.tasks("train")]
    test = [t.payload["id"] for t in env.tasks("test")]
    assert set(train) == sets["DEFAULT_TRAIN_IDS"] and len(train) == 50
    assert set(test) == sets["DEFAULT_VAL_IDS"] and len(test) == 150
    assert train == sorted(train, key=_index) and test == sorted(test, key=_index)
    assert BfclEnv().split == "reme"  # the constructor's default is the config's
    # another category takes the same entry indices
    miss = BfclEnv(split="reme", categories=["multi_turn_miss_param"])
    assert [_index(t.payload["id"]) for t in miss.tasks("train")] == [_index(i) for i in train]


def test_split_shuffled_is_the_earlier_seeded_split():
    order = list(range(200))
    random.Random(0).shuffle(order)
    env = BfclEnv(split="shuffled")
    train = [_index(t.payload["id"]) for t in env.tasks("train")]
    test = [_index(t.payload["id"]) for t in env.tasks("test")]
    assert train == sorted(order[:50]) and test == sorted(order[50:])
    assert train[:3] == [5, 6, 9]  # pinned: the split runs made before split=reme existed
    assert train != [_index(i) for i in reme_ids()["train"]]
    assert len(BfclEnv(split="shuffled", n_train=10).tasks("train")) == 10


def test_bad_split_options_name_the_fix():
    with pytest.raises(ConfigError, match="env.split='random'.*reme.*shuffled"):
        BfclEnv(split="random")
    with pytest.raises(ConfigError, match="env.n_train=10 needs env.split=shuffled"):
        BfclEnv(n_train=10)


def test_the_default_config_runs_remes_ids_with_thinking_off():
    cfg = compose_cfg(["env=bfcl", "backbone=qwen3_8b"])
    assert cfg.env.split == "reme"
    assert cfg.backbone.enable_thinking is False and cfg.env.thinking is False


@pytest.mark.parametrize("experiment", BFCL_EXPERIMENTS)
def test_reme_bfcl_experiments_use_remes_ids_and_think(experiment):
    cfg = compose_cfg([f"experiment={experiment}"])
    assert cfg.env.split == "reme"
    assert cfg.backbone.enable_thinking is True and cfg.env.thinking is True
    assert cfg.env.thinking_max_tokens == THINKING_MAX_TOKENS == 16384
    env = instantiate(cfg.env)
    assert env.max_tokens == 16384 and env.split == "reme" and env.n_train == 50


def test_reme_appworld_keeps_thinking_off_and_checks_pass_with_other_backbones():
    assert {"reme_table1", "reme_table4_14b", "reme_fig4"} <= set(BFCL_EXPERIMENTS)
    assert compose_cfg(["experiment=reme_table1_appworld"]).backbone.enable_thinking is False
    # the experiment's thinking switch is a key the embedded model and the expert take too
    for backbone in ("scripted", "smollm2_135m"):
        cfg = compose_cfg(["experiment=reme_table1", f"backbone={backbone}", "embedder=minilm"])
        validate(cfg)
        assert cfg.backbone.enable_thinking is True
