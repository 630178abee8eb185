"""G-Memory query-graph cost (Eq. 1-4) on synthetic query embeddings.

    python benchmarks/gmemory_retrieval.py --sizes 5000 20000

Each graph holds N queries with random unit embeddings of ``--dim`` dimensions (384: MiniLM's),
added one by one through ``QueryGraph.add`` (each add ranks the new query against every stored
one to link it; at 384 dimensions no random pair reaches G-Memory's link threshold 0.85, so the
graph has no edges and ``hops`` expands nothing; the line prints the edge count). Then
``retrieve(probe, k=1, hops=1)`` (the G-Memory defaults) and ``nearest(probe, 5, RESOLVED)``
(the solved-task pool) are timed over random probes.

``method_*``: the whole ``GMemory`` retrieval (top-k + 1 hop, solved pool, the 4 solved + 2
failed insight neighbours; ``use_llm=False``, so no LLM rerank) per query, over waves of
``--wave`` episodes through ``retrieve_batch`` (one call per query where the code has none),
with a table embedder (a text's vector is looked up, so the embedding model's cost is left out:
see ``reme_retrieval.py`` for it), and ``load_s``: ``load_state_dict`` of the graph's snapshot
(JSON values). Run it on an older checkout (``PYTHONPATH=<old>/src``) for the before numbers.
One process; numpy uses the BLAS threads it picks.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from memarena.core import MemoryQuery, MemoryServices, Observation, Task
from memarena.memory.gmemory import GMemory
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryGraph, QueryNode


class TableEmbedder:
    """``encode`` looks each text's vector up (goal ``g<i>`` -> row i of ``table``)."""

    name = "table"

    def __init__(self, table: np.ndarray) -> None:
        self.table, self.dim = table, table.shape[1]

    def encode(self, texts):
        return self.table[[int(t[1:]) for t in texts]]


def run_method(n: int, dim: int, probes: int, wave: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(n + probes, dim)).astype(np.float32)
    embedder = TableEmbedder(table)

    def fresh() -> GMemory:
        services = MemoryServices(embedder_factory=lambda: embedder)
        return GMemory(services=services, env_name="bench", use_llm=False)

    memory = fresh()
    for i in range(n):  # straight into the graph (no LLM, no insights)
        task = Task(id=f"t{i}", env="bench", split="train", domain="d", goal=f"g{i}")
        ok = i % 2 == 0
        memory.queries.add(
            QueryNode(id=task.id, goal=task.goal, status=RESOLVED if ok else FAILED),
            table[i],
        )
    memory.freeze()
    queries = [
        MemoryQuery(
            Task(id=f"q{i}", env="bench", split="test", domain="d", goal=f"g{n + i}"),
            Observation("", ""),
        )
        for i in range(probes)
    ]
    batched = hasattr(type(memory), "retrieve_batch") and "retrieve_batch" in vars(GMemory)
    per_query = []
    for start in range(0, probes, wave):
        chunk = queries[start : start + wave]
        t0 = time.perf_counter()
        if batched:
            memory.retrieve_batch(chunk)
        else:
            for q in chunk:
                memory.retrieve(q)
        per_query += [(time.perf_counter() - t0) / len(chunk)] * len(chunk)
    state = memory.state_dict()
    loads = []
    for _ in range(3):
        again = fresh()
        t0 = time.perf_counter()
        again.load_state_dict(state)
        loads.append(time.perf_counter() - t0)
    p50, p95 = percentiles(per_query)
    return (
        f"gmemory_method queries={n} dim={dim} wave={wave} batched={batched} "
        f"method_retrieve_p50_ms={p50:.3f} method_retrieve_p95_ms={p95:.3f} "
        f"load_s={min(loads):.3f} probes={probes}"
    )


def percentiles(times: list[float]) -> tuple[float, float]:
    """p50 and p95 in milliseconds."""
    p50, p95 = np.percentile(times, [50, 95]) * 1e3
    return float(p50), float(p95)


def run(n: int, dim: int, probes: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    graph = QueryGraph(link_k=10, link_threshold=0.85)
    start = time.perf_counter()
    for i, vector in enumerate(vectors):
        status = RESOLVED if i % 2 == 0 else FAILED
        graph.add(QueryNode(id=f"q{i}", goal=f"q{i}", status=status), vector)
    build_s = time.perf_counter() - start
    retrieve, nearest = [], []
    for probe in rng.normal(size=(probes, dim)).astype(np.float32):
        t0 = time.perf_counter()
        graph.retrieve(probe, k=1, hops=1)
        t1 = time.perf_counter()
        graph.nearest(probe, 5, RESOLVED)
        t2 = time.perf_counter()
        retrieve.append(t1 - t0)
        nearest.append(t2 - t1)
    r50, r95 = percentiles(retrieve)
    n50, n95 = percentiles(nearest)
    return (
        f"gmemory_retrieval queries={n} dim={dim} edges={graph.graph.number_of_edges()} "
        f"build_s={build_s:.2f} add_mean_ms={build_s / n * 1e3:.3f} "
        f"retrieve_p50_ms={r50:.3f} retrieve_p95_ms={r95:.3f} "
        f"nearest_resolved_p50_ms={n50:.3f} nearest_resolved_p95_ms={n95:.3f} probes={probes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wave", type=int, default=16, help="queries per retrieve_batch")
    parser.add_argument("--graph-only", action="store_true", help="skip the GMemory lines")
    args = parser.parse_args()
    for n in args.sizes:
        print(run(n, args.dim, args.probes, args.seed), flush=True)
        if not args.graph_only:
            print(run_method(n, args.dim, args.probes, args.wave, args.seed), flush=True)


if __name__ == "__main__":
    main()
