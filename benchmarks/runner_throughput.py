"""Throughput of the batched runner: env steps per second and where the wall time goes.

    python benchmarks/runner_throughput.py backbone=smollm2_135m env=pddl --concurrency 1 8
    python benchmarks/runner_throughput.py backbone=scripted --concurrency 8 --tasks 40

Runs evaluation episodes through the real pipeline parts (env, backbone, runner; memory none)
and reports steps/s, the share of wall time spent inside ``backbone.generate`` and the prefix
hit rate (prompt tokens the hf engine reused from its KV store / prompt tokens it was given),
for the old agent prompt (``single`` format, no KV reuse) and the new one (``conversation``,
KV reuse), side by side in one process on one loaded model.
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

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.agent import EpisodeRunner, RunnerSettings
from memarena.agent.policy import Policy, as_policy
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


# the agent's prompt before issue 18 (one rebuilt user message, no KV reuse) and now
FORMATS = {
    "old": {"prompt_format": "single", "prefix_reuse": False},
    "new": {"prompt_format": "conversation", "prefix_reuse": True},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. backbone=scripted")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--formats", nargs="+", default=["old", "new"], choices=list(FORMATS))
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
    store = getattr(backbone.inner, "prefixes", None)  # the hf engine's prefix KV store
    capacity = store.capacity if store is not None else 0
    rows = []
    for name in args.formats:
        variant = FORMATS[name]
        for conc in args.concurrency:
            if store is not None:
                store.clear()
                store.capacity = capacity if variant["prefix_reuse"] else 0
            rows.append(_measure(cfg, env, tasks, backbone, name, variant, conc, args))
    print(json.dumps({"model_load_s": round(load_s, 2), "runs": rows}, indent=2))
    env.close()
    sys.exit(0)


def _measure(cfg, env, tasks, backbone, name, variant, conc, args) -> dict:
    backbone.seconds = 0.0
    usage = getattr(backbone.inner, "usage", None)
    before = (usage.engine_prompt_tokens, usage.reused_prompt_tokens) if usage else (0, 0)
    settings = RunnerSettings(
        concurrency=conc,
        step_budget=args.step_budget or env.step_budget,
        history_steps=cfg.protocol.history_steps,
        max_tokens=cfg.protocol.max_tokens or env.max_tokens,
        seed=cfg.seed,
        prompt_format=variant["prompt_format"],
    )
    agent = backbone.inner if isinstance(backbone.inner, Policy) else as_policy(backbone)
    runner = EpisodeRunner(env, agent, NoMemory(), settings, progress_bar=False)
    t0 = time.perf_counter()
    results = runner.run(tasks)
    wall = time.perf_counter() - t0
    steps = sum(r.outcome.steps for r in results)
    computed = usage.engine_prompt_tokens - before[0] if usage else 0
    reused = usage.reused_prompt_tokens - before[1] if usage else 0
    return {
        "backbone": cfg.backbone.name,
        "env": cfg.env.name,
        "format": name,
        "concurrency": conc,
        "episodes": len(results),
        "steps": steps,
        "wall_s": round(wall, 2),
        "steps_per_s": round(steps / wall, 3),
        "backbone_share": round(backbone.seconds / wall, 3),
        "prompt_tokens": computed,
        "prefix_hit_rate": round(reused / computed, 3) if computed else None,
        "success_rate": sum(r.outcome.success for r in results) / len(results),
    }


if __name__ == "__main__":
    main()
