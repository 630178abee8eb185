"""Generate the embedded ALFWorld household suite ahead of a run and report the time.

    python scripts/build_household_suite.py --cache-dir .cache/alfworld --n-train 8 --workers 4

Uses the same generator and cache key as ``env=alfworld`` (with the same sizes, a run reuses it).
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from memarena.envs.alfworld.generator import SuiteSpec, generate_suite
from memarena.envs.alfworld.scenes import DOMAINS, TASK_TYPES

log = logging.getLogger("build_household_suite")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cache-dir", default=".cache/alfworld")
    p.add_argument("--domains", nargs="+", default=list(DOMAINS))
    p.add_argument("--n-train", type=int, default=8)
    p.add_argument("--n-valid-seen", type=int, default=4)
    p.add_argument("--n-valid-unseen", type=int, default=4)
    p.add_argument("--n-layouts", type=int, default=6)
    p.add_argument("--n-heldout-layouts", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-expert-steps", type=int, default=30)
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    spec = SuiteSpec(
        tuple(a.domains),
        tuple(TASK_TYPES),
        a.n_train,
        a.n_valid_seen,
        a.n_valid_unseen,
        a.n_layouts,
        a.n_heldout_layouts,
        a.seed,
        a.max_expert_steps,
    )
    t0 = time.perf_counter()
    out = generate_suite(spec, Path(a.cache_dir), workers=a.workers)
    manifest = json.loads((out / "suite.json").read_text())
    log.info(
        "suite at %s in %.1f s: %s, rejected %s",
        out,
        time.perf_counter() - t0,
        {k: len(v) for k, v in manifest["games"].items()},
        manifest["rejected"],
    )


if __name__ == "__main__":
    main()
