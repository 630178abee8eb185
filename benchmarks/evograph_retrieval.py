"""EvoGraph-Mem insight retrieval cost (Eq. 7-10) on synthetic insight graphs.

    python benchmarks/evograph_retrieval.py --sizes 10000 100000

Each graph holds N insight nodes built through the graph's own operations: every node is added
for one of 50k query ids and kept for 0-4 more (1-5 supporting queries), 10% are archived and
10% of the rest carry 1-3 queries of negative evidence. Then ``select(expanded, lam=1.0,
top_b=5)`` is timed over 500 random expanded query sets of 4-40 ids, drawn half from queries
that support some node and half uniformly. One process, one thread.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from memarena.memory.evograph.insight_graph import InsightGraph


def build(n: int, n_queries: int, rng: random.Random) -> InsightGraph:
    graph = InsightGraph()
    for _ in range(n):
        support = rng.sample(range(n_queries), rng.randint(1, 5))
        node_id = graph.add(f"insight {rng.random():.6f}", f"q{support[0]}")
        for q in support[1:]:
            graph.keep(node_id, f"q{q}")
        roll = rng.random()
        if roll < 0.10:
            graph.archive(node_id, f"q{rng.randrange(n_queries)}")
        elif roll < 0.19:  # 10% of the active ones: conflicting evidence
            graph.nodes[node_id].neg.update(
                f"q{rng.randrange(n_queries)}" for _ in range(rng.randint(1, 3))
            )
    return graph


def run(n: int, n_queries: int, probes: int, seed: int) -> str:
    rng = random.Random(seed)
    start = time.perf_counter()
    graph = build(n, n_queries, rng)
    build_s = time.perf_counter() - start
    supported = sorted(graph._index)  # queries that support at least one active node
    times = []
    hits = 0
    for _ in range(probes):
        size = rng.randint(4, 40)
        half = size // 2
        expanded = set(rng.sample(supported, half))
        expanded.update(f"q{rng.randrange(n_queries)}" for _ in range(size - half))
        t0 = time.perf_counter()
        selected = graph.select(expanded, lam=1.0, top_b=5)
        times.append(time.perf_counter() - t0)
        hits += len(selected)
    times.sort()
    p50 = statistics.median(times) * 1e3
    p95 = times[int(0.95 * (len(times) - 1))] * 1e3
    archived = sum(not node.active for node in graph.nodes.values())
    return (
        f"evograph_retrieval nodes={n} archived={archived} queries={n_queries} "
        f"build_s={build_s:.2f} select_p50_ms={p50:.3f} select_p95_ms={p95:.3f} "
        f"mean_selected={hits / probes:.2f} probes={probes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument("--probes", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for n in args.sizes:
        print(run(n, args.queries, args.probes, args.seed), flush=True)


if __name__ == "__main__":
    main()
