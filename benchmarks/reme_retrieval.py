"""ReMe retrieval and dedup cost with a large experience pool, on the embedded MiniLM embedder.

    python benchmarks/reme_retrieval.py --sizes 10000

Fills a pool with N synthetic experiences (usage scenarios and contents combined from BFCL-like
API vocabularies), builds the usage-scenario index, then times ``ReMe.retrieve`` (embed the task
query + cosine over the pool + top-K=5) over random task queries, and the dedup check of a
candidate against the pool's contents. One process; the embedder uses the CPU threads torch
picks.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from memarena.core import MemoryQuery, MemoryServices, Observation, Task
from memarena.embed import SentenceEmbedder
from memarena.memory.reme import Experience, ReMe

APIS = {
    "file system": ["cd", "ls", "mv", "cp", "grep", "touch", "mkdir", "cat"],
    "trading": ["get_stock_info", "place_order", "cancel_order", "get_watchlist"],
    "travel": ["book_flight", "get_flight_cost", "verify_traveler", "cancel_booking"],
    "vehicle": ["startEngine", "fillFuelTank", "lockDoors", "check_tire_pressure"],
    "messaging": ["send_message", "view_messages_sent", "add_contact", "delete_message"],
    "tickets": ["create_ticket", "close_ticket", "get_ticket", "edit_ticket"],
}
VERBS = ["before", "after", "instead of", "only when the user asked for", "to confirm"]


def _text(rng: random.Random) -> tuple[str, str, str]:
    area = rng.choice(list(APIS))
    a, b = rng.sample(APIS[area], 2)
    tag = rng.randrange(10**6)
    when = f"when the user wants to {a.replace('_', ' ')} in the {area} API ({tag})"
    what = f"call {a} {rng.choice(VERBS)} {b}; check the result of {b} first"
    item = rng.randrange(999)
    query = f"Please {a.replace('_', ' ')} and then {b.replace('_', ' ')} for item {item}"
    return when, what, query


def run(n: int, probes: int, seed: int, embedder: SentenceEmbedder) -> str:
    rng = random.Random(seed)
    memory = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
    for _ in range(n):
        when, what, query = _text(rng)
        e = Experience("", when, what, keywords=when.split()[:4], task_query=query)
        e.id = memory.pool.new_id()
        memory.pool.add(e)
    memory.begin_phase("eval")
    t0 = time.perf_counter()
    memory.pool.matrix("usage_scenario")
    index_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    memory.pool.matrix("content")
    content_s = time.perf_counter() - t0
    retrieve, dedup, search = [], [], []
    for i in range(probes):
        _, what, query = _text(rng)
        q = MemoryQuery(Task(f"q{i}", "bench", "test", "d", query), Observation("", query))
        t0 = time.perf_counter()
        ctx = memory.retrieve(q)
        retrieve.append(time.perf_counter() - t0)
        assert len(ctx.memory_ids) == 5
        vector = memory.pool.embed([what])[0]
        t0 = time.perf_counter()
        memory.pool.max_similarity(vector)
        dedup.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        memory.pool.search(vector, "usage_scenario", 5)
        search.append(time.perf_counter() - t0)

    def pct(xs: list[float], q: float) -> float:
        return sorted(xs)[int(q * (len(xs) - 1))] * 1e3

    return (
        f"reme_retrieval experiences={n} index_build_s={index_s:.1f} "
        f"content_index_s={content_s:.1f} "
        f"retrieve_p50_ms={statistics.median(retrieve) * 1e3:.2f} "
        f"retrieve_p95_ms={pct(retrieve, 0.95):.2f} "
        f"search_only_p50_ms={statistics.median(search) * 1e3:.3f} "
        f"dedup_check_p50_ms={statistics.median(dedup) * 1e3:.3f} probes={probes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    embedder = SentenceEmbedder()
    for n in args.sizes:
        print(run(n, args.probes, args.seed, embedder), flush=True)


if __name__ == "__main__":
    main()
