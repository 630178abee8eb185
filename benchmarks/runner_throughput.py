"""Throughput of the batched runner: env steps per second and where the wall time goes.

    python benchmarks/runner_throughput.py backbone=smollm2_135m --concurrency 1 8 --tasks 8
    python benchmarks/runner_throughput.py backbone=scripted --concurrency 8 --tasks 40

Runs evaluation episodes through the real pipeline parts (env, backbone, runner; memory none)
and reports steps/s and the share of wall time spent inside ``backbone.generate``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from memarena.agent import EpisodeRunner, RunnerSettings
from memarena.memory.none import NoMemory

CONF = Path(__file__).resolve().parents[1] / "conf"


class TimedBackbone:
    """Wraps a backbone and adds up the seconds spent in generate()."""

    def __init__(self, inner):
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, requests):
        t0 = time.perf_counter()
        try:
            return self.inner.generate(requests)
        finally:
            self.seconds += time.perf_counter() - t0
            self.calls += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. backbone=scripted")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--step-budget", type=int, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=[*args.overrides, "backbone.cache_path=null"])
    env = instantiate(cfg.env, _convert_="all")
    tasks = env.tasks(cfg.protocol.eval_split)[: args.tasks]
    t_load = time.perf_counter()
    backbone = TimedBackbone(instantiate(cfg.backbone, _convert_="all"))
    load_s = time.perf_counter() - t_load
    rows = []
    for conc in args.concurrency:
        backbone.seconds = 0.0
        settings = RunnerSettings(
            concurrency=conc,
            step_budget=args.step_budget or env.step_budget,
            max_tokens=cfg.protocol.max_tokens,
            seed=cfg.seed,
        )
        runner = EpisodeRunner(env, backbone, NoMemory(), settings, progress_bar=False)
        t0 = time.perf_counter()
        results = runner.run(tasks)
        wall = time.perf_counter() - t0
        steps = sum(r.outcome.steps for r in results)
        rows.append(
            {
                "backbone": cfg.backbone.name,
                "concurrency": conc,
                "episodes": len(results),
                "steps": steps,
                "wall_s": round(wall, 2),
                "steps_per_s": round(steps / wall, 2),
                "backbone_share": round(backbone.seconds / wall, 3),
                "outside_backbone_share": round(1 - backbone.seconds / wall, 3),
                "success_rate": sum(r.outcome.success for r in results) / len(results),
            }
        )
    print(json.dumps({"model_load_s": round(load_s, 2), "runs": rows}, indent=2))
    env.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
