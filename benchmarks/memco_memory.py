"""MemCo memory construction, global rebuild and retrieval cost on synthetic episodes.

    python benchmarks/memco_memory.py --episodes 1000 10000

Synthetic ALFWorld-like episodes (4 scene-domain agents, 6 task types, 40 objects, 30
receptacles with instance ids, 8-20 steps, random failures/stalls, 60% successes) are observed
by MemCo as in acquisition (graph LocalMerge + record induction per episode; no LLM call). Then,
in the same process:

- one full global rebuild (abstraction, exact-key aggregation, checks, Wilson promotion), the
  cached path and the direct reference (``global_memory.rebuild_reference``);
- the latency of one per-step retrieval (query, anchors, facets, bounded selection, composition,
  rendering) over 200 queries for one agent's view: the compiled pools (compiled.py; the first
  query of a memory compiles them, timed on its own as ``compile``) and the entry-by-entry
  reference path of retrieval.py (``--reference``, slow at 10k), with the number of queries
  whose selections differ between the two (must be 0).

One process, one thread.
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time

from memarena.core.types import Feedback, MemoryQuery, Observation, Outcome, Step, Task, Trajectory
from memarena.memory.memco import MemCo
from memarena.memory.memco.global_memory import rebuild_reference

log = logging.getLogger("benchmarks.memco_memory")

DOMAINS = ("kitchen", "living_room", "bedroom", "bathroom")
TYPES = (("clean", "sinkbasin"), ("heat", "microwave"), ("cool", "fridge"), (None, None))
OBJECTS = [f"obj{i}" for i in range(40)]
RECEPTACLES = [f"recep{i}" for i in range(30)]


def episode(rng: random.Random, i: int) -> tuple[Trajectory, Outcome]:
    domain = rng.choice(DOMAINS)
    obj, dest = rng.choice(OBJECTS), rng.choice(RECEPTACLES)
    verb, tool = rng.choice(TYPES)
    goal = f"Your task is to: put a {verb + 'ed ' if verb else ''}{obj} in {dest}."
    task = Task(f"syn/{domain}/train/{i:06d}", "alfworld", "train", domain, goal, {})
    plan = [f"go to {rng.choice(RECEPTACLES)} {rng.randint(1, 4)}",
            f"take {obj} 1 from {rng.choice(RECEPTACLES)} {rng.randint(1, 4)}"]
    if verb:
        plan += [f"go to {tool} 1", f"{verb} {obj} 1 with {tool} 1"]
    plan += [f"go to {dest} {rng.randint(1, 3)}", f"move {obj} 1 to {dest} 1"]
    success = rng.random() < 0.6
    steps, progress = [], 0.0
    for k, action in enumerate(plan):
        while rng.random() < 0.25 and len(steps) < 18:  # detours: failures and stalls
            bad = rng.choice([f"open {rng.choice(RECEPTACLES)} 1", "look", f"examine {obj} 1"])
            steps.append(Step(bad, "Nothing happens.", 0.0, progress,
                              Feedback(True, False, "no_effect")))
        if not success and k == len(plan) - 1:
            break
        progress = min(1.0, progress + (1.0 / len(plan) if k % 2 else 0.0))
        if k == len(plan) - 1:
            progress = 1.0
        steps.append(Step(action, f"You {action.split()[0]} the {obj} 1 at {dest} 1.", 0.0,
                          progress, Feedback(True, True, None)))
    traj = Trajectory(task, "You are in the middle of a room.", steps)
    return traj, Outcome(success, progress, len(steps), "success" if success else "budget")


def percentiles(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def measure(n: int, reference: bool) -> None:
    rng = random.Random(0)
    episodes = [episode(rng, i) for i in range(n)]
    memory = MemCo(env_name="alfworld")
    t0 = time.perf_counter()
    for traj, out in episodes:
        memory.observe(traj, out)
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    memory.rebuild_global()
    rebuild_s = time.perf_counter() - t0
    stores = {agent: local.store for agent, local in sorted(memory.locals.items())}
    t0 = time.perf_counter()
    rebuild_reference(stores, adapter=memory.adapter)
    rebuild_ref_s = time.perf_counter() - t0
    memory.freeze()
    summary = memory.summary()
    records = sum(sum(a["records"].values()) for a in summary["agents"].values())
    memory.set_view(DOMAINS[0])
    queries = []
    for traj, _ in episodes[:200]:
        k = rng.randrange(len(traj.steps))
        obs = traj.steps[k - 1].observation if k else traj.initial_observation
        actions = sorted({s.action for s in traj.steps} | {"look", "inventory"})
        queries.append(
            MemoryQuery(traj.task, Observation(obs, traj.task.goal, actions), k, traj.steps[:k])
        )
    t0 = time.perf_counter()
    memory._compiled_records(DOMAINS[0])
    memory._compiled_globals().for_roles(memory.adapter.roles(queries[0].task))
    compile_s = time.perf_counter() - t0
    fast = []
    for q in queries:
        t1 = time.perf_counter()
        memory.retrieve(q)
        fast.append((time.perf_counter() - t1) * 1000)
    log.info(
        "%d episodes: construction %.2f s (%.2f ms/episode), %d local records; global rebuild "
        "%.2f s (reference %.2f s) -> %d promoted; compile %.2f s; retrieval per step p50 "
        "%.1f ms, p95 %.1f ms",
        n, build, build / n * 1000, records, rebuild_s, rebuild_ref_s,
        summary["global"]["records"], compile_s, *percentiles(fast),
    )  # fmt: skip
    if not reference:
        return
    slow, differ = [], 0
    for q in queries:
        t1 = time.perf_counter()
        ref = memory._select(q, reference=True)
        slow.append((time.perf_counter() - t1) * 1000)
        got = memory._select(q)
        differ += [(e.id, e.rank) for e in ref[1].local + ref[1].global_] != [
            (e.id, e.rank) for e in got[1].local + got[1].global_
        ]
    log.info(
        "%d episodes: reference retrieval (selection only) p50 %.1f ms, p95 %.1f ms; "
        "queries whose selections differ: %d of %d",
        n, *percentiles(slow), differ, len(queries),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--reference", action="store_true",
                        help="also time the reference retrieval path and compare selections")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for n in args.episodes:
        measure(n, args.reference)


if __name__ == "__main__":
    main()
