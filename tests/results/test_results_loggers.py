"""Loggers: W&B offline (no network, no API key) writes a run we can read back; configs build."""

import json
import time
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core.errors import ConfigError
from memarena.results.loggers import NoLogger, WandbLogger, read_offline_run
from memarena.results.metrics import compute_metrics

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("isolated_wandb")


def episodes():
    return [
        {"task_id": "t1", "split": "test", "domain": "kitchen", "run": 0, "success": True,
         "progress": 1.0, "steps": 4, "status": "success", "error": None, "prompt_tokens": 90,
         "completion_tokens": 10, "tokens": 100, "memory_ids": ["m1", "m2"], "wall_s": 0.5},
        {"task_id": "t2", "split": "test", "domain": "bath", "run": 0, "success": False,
         "progress": 0.5, "steps": 10, "status": "error", "error": "env crashed",
         "prompt_tokens": 180, "completion_tokens": 20, "tokens": 200, "memory_ids": [],
         "wall_s": 1.5},
    ]


def test_wandb_offline_run_holds_metrics_config_and_table(tmp_path):
    run_dir = tmp_path / "results/t1/pddl/memco/scripted/seed0"
    metrics = {**compute_metrics(episodes()), "method": "memco", "seed": 0}
    logger = instantiate(OmegaConf.load(REPO / "conf/logger/wandb.yaml"))
    assert isinstance(logger, WandbLogger) and logger.mode == "offline"

    t0 = time.perf_counter()
    logger.start(run_dir, name="seed0", group="t1/pddl/memco/scripted",
                 config=OmegaConf.create({"method": {"name": "memco"}, "seed": 0,
                                          "x": "${seed}"}), job_type="memco")
    logger.log_metrics(metrics)
    logger.log_episodes(episodes())
    logger.finish()
    logger.finish()  # second call is a no-op
    print(f"wandb offline start..finish: {time.perf_counter() - t0:.2f}s")

    offline = list((run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 1, "the run lands in <run_dir>/wandb/offline-run-*"
    run = read_offline_run(run_dir)
    assert run["run"]["group"] == "t1/pddl/memco/scripted" and run["run"]["job_type"] == "memco"
    assert run["run"]["name"] == "seed0" and run["run"]["project"] == "memarena"
    assert run["config"] == {"method": {"name": "memco"}, "seed": 0, "x": 0}  # resolved
    s = run["summary"]
    # 1 success of 2; progress (1 + 0.5) / 2; tokens (100 + 200) / 2; one error
    assert s["success_rate"] == 0.5 and s["progress_rate"] == 0.75
    assert s["tokens_per_task"] == 150.0 and s["n_errors"] == 1 and s["method"] == "memco"
    assert s["per_domain/kitchen/success_rate"] == 1.0
    assert s["success_rate_ci95/0"] == pytest.approx(metrics["success_rate_ci95"][0])
    assert run["history"][0]["success_rate"] == 0.5

    # the episode table is a JSON file in the run's media folder
    (table,) = (offline[0] / "files/media/table").glob("episodes_*.table.json")
    data = json.loads(table.read_text())
    assert data["columns"][:3] == ["task_id", "split", "domain"]
    assert len(data["data"]) == 2 and data["data"][0][0] == "t1"
    assert s["episodes"]["nrows"] == 2


def test_wandb_dir_option_and_disabled_mode(tmp_path):
    logger = WandbLogger(dir=str(tmp_path / "wb"))
    logger.start(tmp_path / "run", "n", "g", {"a": 1})
    logger.log_metrics({"success_rate": 1.0})
    logger.finish()
    assert read_offline_run(tmp_path / "wb")["summary"]["success_rate"] == 1.0
    assert not (tmp_path / "run" / "wandb").exists()

    with WandbLogger(mode="disabled") as off:
        off.start(tmp_path / "off", "n", "g", {"a": 1})
        off.log_metrics({"success_rate": 1.0, "per_domain": {"x": {"n": 1}}})
        off.log_episodes(episodes())
    off.finish()
    assert not list((tmp_path / "off").glob("**/*.wandb"))


def test_logger_misuse_and_none(tmp_path):
    with pytest.raises(ConfigError, match="online.*offline.*disabled"):
        WandbLogger(mode="ofline")
    with pytest.raises(RuntimeError, match="call start"):
        WandbLogger().log_metrics({"a": 1})
    none = instantiate(OmegaConf.load(REPO / "conf/logger/none.yaml"))
    assert isinstance(none, NoLogger)
    none.start(tmp_path, "n", "g", {})
    none.log_metrics({"a": 1})
    none.log_episodes(episodes())
    none.finish()
    none.finish()
    assert not (tmp_path / "wandb").exists()
