"""Memory-LLM calls of one small acquisition per method, with the old reply budgets and the new.

    python benchmarks/memory_llm_calls.py --methods gmemory evograph memrl
    python benchmarks/memory_llm_calls.py --train-tasks 4 --out memory_llm_calls.json

Each method runs the real pipeline in this process (``memarena.pipeline.run``, what ``python
run.py`` calls) on ``env=pddl`` with ``backbone=scripted``: the expert acts (epsilon 0.2 and
30 steps: solved and failed tasks, so G-Memory reaches its insight, merge and re-ranking
calls within 4 tasks), nothing on the agent side is an LLM, and the memory LLM is
the embedded SmolLM2-135M (``memory_backbone`` falls back to it when the agent is scripted).
A few train tasks, one evaluation task, a fresh call cache per run (``paths.llm_cache`` in a
temporary folder), so every memory-LLM request is decoded.

Two arms per method, in one process on one loaded model:

- ``before``: the budgets the methods had before they were sized to their schemas, restored
  with ``method.max_tokens`` caps (:data:`OLD_BUDGETS`: a blanket 768 for ReMe, G-Memory's
  hard-coded 384 / 128 / 16 / 384 / 512 per purpose, ...). A cap only lowers a request's
  budget, so where an old budget was above today's schema bound the request asks for the
  bound: the same answer (a constrained answer stops when its JSON closes), a smaller KV
  allocation;
- ``after``: the defaults: each request asks for its schema's bound
  (:mod:`memarena.core.json_budget`).

Both arms go through the engine's own cap (``backbone.max_new_tokens``: 512 for SmolLM2). Per
method and arm: memory-LLM requests, prompt and completion tokens and fallbacks (from the run's
``usage.json``; ``json_invalid`` counts answers cut before their JSON closed), the mean
``max_tokens`` asked, and the seconds spent inside the memory LLM's ``generate`` (a timing
proxy around the memory backbone). A markdown table on stdout, ``--out`` JSON with the
per-purpose token usage (``metrics.json`` ``memory_token_usage``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.core import ChatRequest
from memarena.pipeline import run as run_pipeline

CONF = Path(__file__).resolve().parents[1] / "conf"
# the module (``memarena.pipeline.build`` as an attribute is the function it exports)
pipeline_build = importlib.import_module("memarena.pipeline.build")

# method -> overrides that reach its memory-LLM branches within a few tasks
METHODS: dict[str, list[str]] = {
    "reme": ["method=reme", "method.samples=2"],
    "gmemory": ["method=gmemory", "method.start_insights_threshold=2",
                "method.rounds_per_insights=2", "method.merge_every=4"],
    "evograph": ["method=evograph"],
    "memorybank": ["method=memorybank", "method.mode=faithful"],
    "voyager": ["method=voyager", "method.mode=faithful"],
    "generative_agents": ["method=generative_agents", "method.mode=faithful",
                          "method.reflection_threshold=20"],
    "amem": ["method=amem", "method.mode=full"],
    "memrl": ["method=memrl"],
    "memskill": ["method=memskill", "method.design_every=2"],
    "langmem": ["method=langmem"],
}  # fmt: skip

# the reply budgets before they were sized to the schemas (method.max_tokens, or the numbers
# hard-coded in the request builders), as caps per purpose
OLD_BUDGETS: dict[str, Any] = {
    "reme": 768,
    # interaction.py 64 + 64 * max_key_steps (5), 128; retrieval.py 16; maintenance.py 96 * 4, 512
    "gmemory": {"key_steps": 384, "fail_reason": 128, "relevance": 16, "insights": 384,
                "merge": 512},
    "evograph": {"key_steps": 384, "relevance": 16, "controller": 384},
    "memorybank": 256,
    "voyager": 256,
    "generative_agents": {"importance": 16, "relevance": 16, "questions": 384, "insights": 384},
    "amem": 384,
    "memrl": 256,
    "memskill": 384,
    "langmem": 512,
}  # fmt: skip


def override(value: Any) -> str:
    """``method.max_tokens=...`` in Hydra's override syntax (``{a:1,b:2}`` for a mapping)."""
    if isinstance(value, dict):
        return "method.max_tokens={" + ",".join(f"{k}:{v}" for k, v in value.items()) + "}"
    return f"method.max_tokens={value}"


class TimedLLM:
    """The memory backbone, with the seconds inside ``generate`` and the budgets asked."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds, self.asked = inner, 0.0, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def generate(self, requests: list[ChatRequest]):
        self.asked += [r.max_tokens for r in requests]
        t0 = time.perf_counter()
        try:
            return self.inner.generate(requests)
        finally:
            self.seconds += time.perf_counter() - t0


class Timing:
    """Wraps the pipeline's memory-LLM factory so each run's memory backbone is timed."""

    def __init__(self) -> None:
        self.original = pipeline_build._memory_llm_factory
        self.last: TimedLLM | None = None

    def __enter__(self) -> Timing:
        def factory(cfg, policy):
            build = self.original(cfg, policy)

            def timed() -> TimedLLM:
                self.last = TimedLLM(build())
                return self.last

            return timed

        pipeline_build._memory_llm_factory = factory
        return self

    def __exit__(self, *exc: Any) -> None:
        pipeline_build._memory_llm_factory = self.original


def one_run(method: str, arm: str, args: argparse.Namespace, root: Path, timing: Timing) -> dict:
    folder = root / f"{method}-{arm}"
    overrides = [
        *METHODS[method],
        "env=pddl",
        "backbone=scripted",
        f"backbone.epsilon={args.epsilon}",
        "logger=none",
        f"protocol.max_train_tasks={args.train_tasks}",
        "protocol.max_eval_tasks=1",
        f"protocol.step_budget={args.step_budget}",
        f"paths.results_dir={folder}",
        f"paths.llm_cache={folder}/llm_calls.sqlite",  # fresh: every request is decoded
        f"seed={args.seed}",
    ]
    if arm == "before":
        overrides.append(override(OLD_BUDGETS[method]))
    cfg = compose("config", overrides=overrides)
    timing.last = None
    t0 = time.perf_counter()
    run_pipeline(cfg, overrides=overrides)
    wall = time.perf_counter() - t0
    (metrics_path,) = folder.rglob("metrics.json")
    metrics = json.loads(metrics_path.read_text())
    usage = json.loads((metrics_path.parent / "usage.json").read_text())["memory"] or {}
    llm = timing.last
    asked = llm.asked if llm else []
    return {
        "method": method,
        "arm": arm,
        "requests": usage.get("requests", 0),
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "completion_tokens": usage.get("completion_tokens", 0),
        "fallbacks": usage.get("fallbacks", {}),
        "max_tokens_mean": round(sum(asked) / len(asked), 1) if asked else 0,
        "llm_seconds": round(llm.seconds, 2) if llm else 0.0,
        "run_seconds": round(wall, 1),
        "purposes": metrics.get("memory_token_usage", {}),
    }


def warm_up(cfg: Any) -> Any:
    """Load SmolLM2 once and decode one JSON request: later runs share the loaded weights
    (counted by reference), and neither arm pays the first call's start-up."""
    backbone = instantiate(cfg.memory_backbone.fallback, cache_path=None, _convert_="all")
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}  # fmt: skip
    backbone.generate([ChatRequest([{"role": "user", "content": "ok?"}], json_schema=schema,
                                   max_tokens=8)])  # fmt: skip
    return backbone


def table(rows: list[dict]) -> str:
    head = (
        "| method | arm | requests | prompt tok | completion tok | mean max_tokens asked "
        "| memory-LLM s | fallbacks |\n|---|---|---:|---:|---:|---:|---:|---|"
    )
    lines = [head]
    for r in rows:
        fb = ", ".join(f"{k} {v}" for k, v in sorted(r["fallbacks"].items())) or "-"
        lines.append(
            f"| {r['method']} | {r['arm']} | {r['requests']} | {r['prompt_tokens']} | "
            f"{r['completion_tokens']} | {r['max_tokens_mean']} | {r['llm_seconds']} | {fb} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--arms", nargs="+", default=["before", "after"],
                        choices=["before", "after"])  # fmt: skip
    parser.add_argument("--train-tasks", type=int, default=4)
    parser.add_argument("--step-budget", type=int, default=30)
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    rows: list[dict] = []
    with (
        initialize_config_dir(config_dir=str(CONF), version_base=None),
        tempfile.TemporaryDirectory(prefix="memory-llm-calls-") as tmp,
        Timing() as timing,
    ):
        held = warm_up(compose("config", overrides=["backbone=scripted"]))
        try:
            for method in args.methods:
                for arm in args.arms:
                    row = one_run(method, arm, args, Path(tmp), timing)
                    rows.append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "purposes"}),
                          file=sys.stderr, flush=True)  # fmt: skip
        finally:
            held.close()
    print(table(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
