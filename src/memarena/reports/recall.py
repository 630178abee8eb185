"""The recall table (issue 52): success per method pooled over seeds, with its interval over
tasks, the gain over ``none`` on the same tasks with a paired bootstrap interval, chance, and
wall time. It reads only run folders (``metrics.json``, ``episodes.jsonl``, ``run_info.json``).

The unit is a task of one seed (``env=recall`` draws new devices per seed, so the seeds' tasks
are distinct): an agent view or a run of the same task is averaged into it first (MemCo's two
domain agents each play every test task), as :func:`~memarena.results.stats.wilson_ci_over_units`
asks. The gain is the mean over the tasks both arms played of (method - none), with a
percentile bootstrap over those tasks (fixed seed, so the printed interval is reproducible).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memarena.core.jsonl import read_jsonl
from memarena.results.stats import wilson_ci_over_units

BASELINE = "none"
RESAMPLES = 2000


def task_means(run_dir: Path) -> dict[str, float]:
    """Mean success per test task of one run (the last record of each agent view and run)."""
    last: dict[tuple, float] = {}
    for r in read_jsonl(run_dir / "episodes.jsonl"):
        key = (r.get("agent"), r.get("repetition", 0), r.get("run", 0), r["task_id"])
        last[key] = float(bool(r.get("success")))
    per_task: dict[str, list[float]] = defaultdict(list)
    for (*_, task), ok in last.items():
        per_task[task].append(ok)
    return {t: sum(v) / len(v) for t, v in per_task.items()}


def paired_gain(
    arm: Mapping[Any, float], base: Mapping[Any, float], resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, float, float, int]:
    """(mean gain, 2.5% and 97.5% bootstrap percentiles, tasks) of ``arm - base`` over the
    tasks both hold."""
    keys = sorted(set(arm) & set(base), key=str)
    if not keys:
        return float("nan"), float("nan"), float("nan"), 0
    diffs = [arm[k] - base[k] for k in keys]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(resamples))
    low, high = means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]
    return sum(diffs) / len(diffs), low, high, len(keys)


def method_runs(root: Path) -> dict[str, dict[int, Path]]:
    """``{method result name: {seed: run dir}}`` of every finished run under ``root``."""
    out: dict[str, dict[int, Path]] = defaultdict(dict)
    for metrics in sorted(Path(root).rglob("metrics.json")):
        m = json.loads(metrics.read_text(encoding="utf-8"))
        out[str(m["method"])][int(m["seed"])] = metrics.parent
    return dict(out)


def rows(root: Path, order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per method (``order`` first, then the rest by name): pooled success, its Wilson
    interval over tasks, the gain over ``none`` with its bootstrap interval, chance, seeds,
    tasks, and the summed wall time of its runs (``run_info.json``)."""
    runs = method_runs(root)
    units: dict[str, dict[tuple[int, str], float]] = {}
    for method, seeds in runs.items():
        units[method] = {(s, t): v for s, d in seeds.items() for t, v in task_means(d).items()}
    base = units.get(BASELINE, {})
    names = [m for m in order if m in runs] + sorted(m for m in runs if m not in order)
    out = []
    for method in names:
        u, seeds = units[method], runs[method]
        metrics = [json.loads((d / "metrics.json").read_text()) for d in seeds.values()]
        wall = sum(json.loads((d / "run_info.json").read_text()).get("wall_s", 0.0)
                   for d in seeds.values())  # fmt: skip
        low, high = wilson_ci_over_units(list(u.values())) if u else (float("nan"),) * 2
        gain = paired_gain(u, base) if method != BASELINE else (0.0, 0.0, 0.0, len(u))
        chance = [m.get("chance_success") for m in metrics if m.get("chance_success") is not None]
        out.append({
            "method": method, "seeds": len(seeds), "tasks": len(u),
            "success": sum(u.values()) / len(u) if u else float("nan"), "low": low, "high": high,
            "gain": gain[0], "gain_low": gain[1], "gain_high": gain[2],
            "chance": sum(chance) / len(chance) if chance else float("nan"), "wall_s": wall,
        })  # fmt: skip
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = [
        "| method | seeds | tasks | success [95% CI over tasks] | gain over none [95% CI] | "
        "chance | wall s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table:
        gain = (
            "-" if r["method"] == BASELINE
            else f"{r['gain']:+.3f} [{r['gain_low']:+.3f}, {r['gain_high']:+.3f}]"
        )  # fmt: skip
        lines.append(
            f"| {r['method']} | {r['seeds']} | {r['tasks']} | {r['success']:.3f} "
            f"[{r['low']:.3f}, {r['high']:.3f}] | {gain} | {r['chance']:.3f} | {r['wall_s']:.0f} |"
        )
    return "\n".join(lines)
