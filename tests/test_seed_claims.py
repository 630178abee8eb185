"""What each experiment file says a seed varies (``seed_varies``) against its composed config
(issue 45 item 1).

Every method an experiment runs (its sweep's, or its default) has a line. A line that says the
seed changes ``nothing`` holds only where nothing in the cell samples: a greedy agent, no memory
LLM call above temperature 0, no seeded draw of the method's own (``method.seed``). A line that
names something holds only where something does. The pipeline seeds every sampled request from
the run seed (tests/memory/test_run_seeds.py), so these are exactly the cells whose seeds differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig, ListConfig, OmegaConf

from conftest import CONF, compose_cfg

# experiment files that are not paper tables or sweeps (a capped demo, a scripted smoke run)
NOT_SWEEPS = {"demo", "smoke"}
# methods whose configured temperature is never used in the mode their experiment runs them
NO_LLM = {"amem_lite": "MemCo's A-Mem makes no LLM call (mode: lite)"}
# methods whose method.seed is never used in the mode their experiment runs them
SEED_UNUSED = {
    "memskill_as_released": "the released controller is loaded, never initialised or sampled"
}
EXPERIMENTS = sorted(
    p.stem for p in (CONF / "experiment").glob("*.yaml") if p.stem not in NOT_SWEEPS
)


def methods_of(name: str) -> list[str | None]:
    """The method options an experiment runs: its sweep's, else its default (None)."""
    cfg = compose_cfg([f"experiment={name}"], return_hydra_config=True)
    swept = OmegaConf.select(cfg, "hydra.sweeper.params.method", default=None)
    return [m for m in str(swept).split(",") if m] if swept else [None]


def temperatures(node: object, path: str = "") -> Iterator[tuple[str, float]]:
    """Every number under a key naming a temperature, anywhere in ``node``."""
    if isinstance(node, DictConfig):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if "temperature" in str(key) and isinstance(value, int | float):
                yield here, float(value)
            elif "temperature" in str(key) and isinstance(value, DictConfig):
                yield from ((f"{here}.{k}", float(v)) for k, v in value.items())
            else:
                yield from temperatures(value, here)
    elif isinstance(node, ListConfig):
        for i, value in enumerate(node):
            yield from temperatures(value, f"{path}.{i}")


def sources(cfg: DictConfig) -> list[str]:
    """What in a composed cell depends on the run seed."""
    out = []
    if cfg.protocol.temperature > 0:
        out.append(f"protocol.temperature={cfg.protocol.temperature}")
    if cfg.method.name not in NO_LLM:
        for key, value in temperatures(cfg.method):
            samples = cfg.method.get("samples", 1)
            if value > 0 and not (key == "sample_temperature" and samples <= 1):
                out.append(f"method.{key}={value}")
    if "seed" in cfg.method and cfg.method.name not in SEED_UNUSED:
        out.append("method.seed")
    if OmegaConf.to_container(cfg.env, resolve=False).get("seed") == "${seed}":
        out.append("env.seed")  # the tasks themselves follow the run seed (env=recall)
    return out


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_method_of_an_experiment_says_what_a_seed_varies(name):
    for option in methods_of(name):
        cfg = compose_cfg([f"experiment={name}", *([f"method={option}"] if option else [])])
        claim = (cfg.get("seed_varies") or {}).get(cfg.method.name)
        assert claim, f"experiment={name}: seed_varies has no line for {cfg.method.name}"
        found = sources(cfg)
        if claim.startswith("nothing"):
            assert not found, f"{name} {cfg.method.name} says nothing varies, but: {found}"
        else:
            assert found, f"{name} {cfg.method.name}: '{claim}', but nothing in it samples"
        if cfg.protocol.temperature > 0:
            assert "agent" in claim, (name, cfg.method.name, claim)


def test_a_run_writes_its_line_into_metrics(tmp_path):
    """metrics.json carries what a seed varies for the run's method."""
    import json

    from conftest import run_py

    proc = run_py(["experiment=pddl_baselines", "method=icl", "backbone=scripted",
                   "env.require_data=false", "protocol.max_train_tasks=1",
                   "protocol.max_eval_tasks=1", "logger=none",
                   f"paths.results_dir={tmp_path}"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (path,) = Path(tmp_path).rglob("metrics.json")
    line = json.loads(path.read_text())["seed_varies"]
    assert line == compose_cfg(["experiment=pddl_baselines"]).seed_varies.icl
    assert line.startswith("nothing")
