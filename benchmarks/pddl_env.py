"""Speed of the PDDL env: text-interface steps per second and expert planning time per domain.

    python benchmarks/pddl_env.py                       # generated test split
    python benchmarks/pddl_env.py --problems-dir DIR    # an AgentBoard-format folder

Steps are a fixed-seed mix of applicable actions, inapplicable actions, unknown text and
meta-actions, each rendered in full (admissible list and observation text), as the runner sees
them. Planning time is the expert's first plan from the initial state (fresh process caches).
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time

from memarena.envs.pddl.env import PDDLEnv
from memarena.envs.pddl.planner import get_expert
from memarena.envs.pddl.specs import CHECK_VALID_ACTIONS

log = logging.getLogger("benchmarks.pddl_env")


def steps_per_second(env: PDDLEnv, domain: str, steps: int = 2000) -> float:
    rng = random.Random(0)
    tasks = [t for t in env.tasks("test") if t.domain == domain]
    episode = env.open(tasks[0])
    obs = episode.reset()
    names = sorted(episode.problem.schemas)
    t0 = time.perf_counter()
    for i in range(steps):
        roll = rng.random()
        if roll < 0.7:
            action = rng.choice(obs.admissible_actions)
        elif roll < 0.85:
            action = f"{rng.choice(names)} {' '.join(sorted(episode.problem.objects)[:2])}"
        elif roll < 0.95:
            action = "fly to the moon"
        else:
            action = CHECK_VALID_ACTIONS
        result = episode.step(action)
        obs = result.observation
        if result.done:
            episode = env.open(tasks[i % len(tasks)])
            obs = episode.reset()
    return steps / (time.perf_counter() - t0)


def planning_times(env: PDDLEnv, domain: str) -> list[tuple[str, float, int, str]]:
    out = []
    for task in (t for t in env.tasks("test") if t.domain == domain):
        episode = env.open(task)
        episode.reset()
        result = get_expert(episode.problem, episode.planner).plan(episode.state)
        length = -1 if result.actions is None else len(result.actions)
        out.append((task.payload["source"], result.seconds, length, str(result.strategy)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems-dir", default=None)
    parser.add_argument("--n-test", type=int, default=20)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    env = PDDLEnv(problems_dir=args.problems_dir, n_train=0, n_test=args.n_test)
    for domain in env.domains():
        sps = steps_per_second(env, domain)
        times = planning_times(env, domain)
        secs = [t for _, t, _, _ in times]
        lengths = [n for _, _, n, _ in times]
        strategies = sorted({s for *_, s in times})
        log.info(
            "%-11s %6.0f steps/s | plan %2d problems: total %.2fs mean %.3fs max %.2fs | "
            "length mean %.1f max %d | strategies %s",
            domain,
            sps,
            len(times),
            sum(secs),
            statistics.mean(secs),
            max(secs),
            statistics.mean(lengths),
            max(lengths),
            strategies,
        )


if __name__ == "__main__":
    main()
