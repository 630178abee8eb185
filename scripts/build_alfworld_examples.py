"""Write ALFWorld's worked examples, one per task type, into memarena's package
(``envs/alfworld/data/fewshot.json``): the expert plays the first train game of each task type
of the embedded household suite, rendered as the agent sees a task (the shape of the one-shot
cases AgentBoard / G-Memory / MemCo give their agents). Written for this project from our own
suite; no prompt text of other projects.

    python scripts/build_alfworld_examples.py [--cache-dir .cache/alfworld]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from memarena.envs.alfworld import AlfWorldEnv
from memarena.envs.alfworld.env import EXAMPLES_FILE
from memarena.envs.alfworld.scenes import TASK_TYPES
from memarena.envs.examples import play_expert, render_example


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=".cache/alfworld")
    parser.add_argument("--n-train", type=int, default=24, help="suite train games per domain")
    args = parser.parse_args()
    # a train split large enough to hold every task type (the demo suite's may miss one)
    env = AlfWorldEnv(cache_dir=args.cache_dir, fewshot=0, suite={"n_train": args.n_train})
    examples: dict[str, str] = {}
    for task in env.tasks("train"):
        family = task.payload["task_family"]
        if family in examples:
            continue
        initial, turns = play_expert(env.open(task), max_steps=30)
        examples[family] = render_example(task.goal, initial, turns)
        if len(examples) == len(TASK_TYPES):
            break
    env.close()
    ordered = {t: examples[t] for t in TASK_TYPES if t in examples}
    EXAMPLES_FILE.write_text(json.dumps(ordered, indent=1) + "\n")
    print(f"wrote {len(ordered)} examples to {Path(EXAMPLES_FILE)}")


if __name__ == "__main__":
    main()
