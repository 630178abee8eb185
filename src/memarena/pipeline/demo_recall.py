"""The demo's second part (issue 52): none vs MemCo on ``env=recall``, side by side.

A bare ``python run.py`` runs the ALFWorld demo, then the two arms of the experiment named by
``demo.second_part`` (``conf/experiment/recall_demo.yaml``), each a normal run with its own run
folder (resumable, replayed from the call cache on a second try), and prints both success
rates with their intervals over tasks, MemCo's gain on the same tasks with its bootstrap
interval, chance, and each arm's wall time (:mod:`memarena.reports.recall`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig

from memarena.reports.recall import paired_gain, task_means
from memarena.results.stats import wilson_ci_over_units

log = logging.getLogger(__name__)

ARMS = ("none", "memco")


def run_arms(
    experiment: str, arms: Sequence[str] = ARMS, extra: Sequence[str] = ()
) -> dict[str, tuple[Path, float]]:
    """Compose and run ``experiment=<experiment> method=<arm> *extra`` for each arm (inside the
    running Hydra app, or an ``initialize_config_dir`` context); ``{arm: (run dir, wall s)}``."""
    from hydra import compose

    from memarena.pipeline import run, run_dir

    out = {}
    for arm in arms:
        overrides = [f"experiment={experiment}", f"method={arm}", *extra]
        cfg = compose(config_name="config", overrides=overrides)
        log.info("demo, second part: %s", " ".join(overrides))
        t0 = time.perf_counter()
        run(cfg, {"experiment": experiment, "method": arm, "env": "recall"}, overrides)
        out[arm] = (run_dir(cfg), time.perf_counter() - t0)
    return out


def side_by_side(dirs: dict[str, tuple[Path, float]]) -> str:
    """The printed comparison of the arms' run folders: the first arm is the baseline."""
    (base_name, (base_dir, _)), *_ = dirs.items()
    base = task_means(base_dir)
    lines = [
        "memarena demo, second part: does memory help the embedded model? env=recall (device "
        "codes shown on training tasks, hidden on test tasks; a sanity check, not a benchmark)",
        f"  {'method':<8} {'tasks':>5}  {'success [95% CI over tasks]':<28}  "
        f"{'gain over ' + base_name + ' [95% CI]':<28}  wall",
    ]
    for arm, (folder, wall) in dirs.items():
        units = task_means(folder)
        rate = sum(units.values()) / len(units)
        low, high = wilson_ci_over_units(list(units.values()))
        if arm == base_name:
            gain_text = "-"
        else:
            gain, g_low, g_high, _ = paired_gain(units, base)
            gain_text = f"{gain:+.3f} [{g_low:+.3f}, {g_high:+.3f}]"
        lines.append(
            f"  {arm:<8} {len(units):>5}  {f'{rate:.3f} [{low:.3f}, {high:.3f}]':<28}  "
            f"{gain_text:<28}  {wall:.0f} s"
        )
    metrics = json.loads((base_dir / "metrics.json").read_text(encoding="utf-8"))
    chance = float(metrics.get("chance_success", float("nan")))
    lines.append(
        f"  chance (a blind guess at every step): {chance:.3f}; runs: "
        + ", ".join(str(folder) for folder, _ in dirs.values())
    )
    return "\n".join(lines)


def wanted(cfg: DictConfig, overrides: Sequence[str]) -> str | None:
    """The experiment of the second part when this run should add it: the demo's
    ``demo.second_part`` is set and the command line overrides nothing but ``demo.*``."""
    second = (cfg.get("demo") or {}).get("second_part")
    if not second:
        return None
    others = [o for o in overrides if not o.lstrip("+~").startswith("demo.")]
    if others:
        log.info(
            "demo, second part skipped (the command sets %s); run it alone with: "
            "python run.py -m experiment=%s",
            " ".join(others),
            second,
        )
        return None
    return str(second)
