"""What a sweep will cost, before it runs: jobs, episodes, LLM calls, prompt and completion
tokens per job, and GPU-hours (vLLM presets) or dollars (API presets), each as low-high bounds.

    python scripts/estimate.py experiment=memco_table1_alfworld
    python scripts/estimate.py experiment=reme_table1 \\
        estimate.gpu_throughput.qwen3-8b.decode_tokens_per_s=1500
    python scripts/estimate.py method=none,icl env=pddl seed=0,1 protocol.max_eval_tasks=8
    python scripts/estimate.py --paper     # every paper experiment: the README's Markdown table

The arguments are those of `python run.py -m ...` (the sweep), plus `estimate.<key>=<value>` for
conf/estimate.yaml (throughput, prices, the official task counts, the measuring run's caps).
Each (method, env) cell is measured by one capped run with the scripted expert acting and
every request counted in tokens (memarena.launch.measure), then scaled to the job's tasks, runs
and step limit (memarena.launch.estimate). low: every episode as long as the expert's, replies
as long as its actions; high: every episode to the step limit, every reply to max_tokens.
"""

from __future__ import annotations

import logging
import sys

from memarena.core import MemarenaError
from memarena.launch.estimate import estimate, paper_experiments, paper_table, settings, table


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("memarena.launch.estimate").setLevel(logging.INFO)
    ours = [a for a in argv if a.startswith("estimate.")]
    sweep = [a for a in argv if not a.startswith("estimate.") and a not in ("-m", "--paper")]
    try:
        est = settings(ours)
        if "--paper" in argv:  # every paper experiment, measurements shared between them
            measured: dict = {}
            results = {}
            for name in paper_experiments(est.papers):
                results[name] = estimate([f"experiment={name}", *sweep], est, measured)
                print(table(results[name]), end="\n\n", file=sys.stderr, flush=True)
            print(paper_table(results))
            return 0
        rows = estimate(sweep, est)
    except MemarenaError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
