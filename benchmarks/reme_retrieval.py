"""ReMe retrieval and dedup cost with a large experience pool, on the embedded MiniLM embedder.

    python benchmarks/reme_retrieval.py --sizes 10000

Fills a pool with N synthetic experiences (usage scenarios and contents combined from BFCL-like
API vocabularies), builds the usage-scenario index, then times, over the same random task
queries:

- before: ``ReMe.retrieve`` one query at a time (embed the task query + cosine over the pool +
  top-K=5), the reference path;
- after: ``ReMe.retrieve_batch`` over waves of ``--wave`` queries (one encode call and one matrix
  product per wave), reported per query with the wave's time shared out;
- the dedup check of a candidate against the pool's contents and the cosine top-5 alone;
- snapshot load (JSON on disk -> first answer): an old snapshot without stored embeddings
  (re-embeds the 10k usage scenarios) against one with them.

``same_selections`` says the batched and reloaded paths chose the same experiences as the
reference path. One process; the embedder uses the CPU threads torch picks.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

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


def _pct(xs: list[float], q: float) -> float:
    return sorted(xs)[int(q * (len(xs) - 1))] * 1e3


def _queries(rng: random.Random, n: int) -> list[MemoryQuery]:
    out = []
    for i in range(n):
        query = _text(rng)[2]
        out.append(MemoryQuery(Task(f"q{i}", "bench", "test", "d", query), Observation("", query)))
    return out


def _reload(memory: ReMe, embedder: SentenceEmbedder, old: bool) -> tuple[ReMe, float]:
    """A fresh ReMe loaded from ``memory``'s snapshot (JSON on disk), and the seconds until it
    answered its first query. ``old``: the snapshot without stored embeddings (the layout
    before issue 23), so the index is embedded again as every load used to do."""
    with tempfile.TemporaryDirectory() as tmp:
        memory.save(Path(tmp))
        if old:
            path = Path(tmp) / "memory.json"
            blob = json.loads(path.read_text())
            blob["state"]["pool"].pop("vectors", None)
            path.write_text(json.dumps(blob))
        fresh = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
        t0 = time.perf_counter()
        fresh.load(Path(tmp))
        fresh.begin_phase("eval")
        fresh.retrieve_batch(_queries(random.Random(1), 1))
        return fresh, time.perf_counter() - t0


def run(n: int, probes: int, wave: int, seed: int, embedder: SentenceEmbedder) -> str:
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
    queries = _queries(rng, probes)
    # before: one retrieval (one encode call) per query, the LRU off
    memory.query_encoder.size = 0
    single, same = [], True
    for q in queries:
        t0 = time.perf_counter()
        ctx = memory.retrieve(q)
        single.append(time.perf_counter() - t0)
        assert len(ctx.memory_ids) == 5
    reference = [memory.shown[q.task.id].memory_ids for q in queries]
    # after: waves of `wave` queries, one encode call and one matrix product per wave
    batched = []
    for start in range(0, probes, wave):
        chunk = queries[start : start + wave]
        t0 = time.perf_counter()
        contexts = memory.retrieve_batch(chunk)
        per_query = (time.perf_counter() - t0) / len(chunk)
        batched.extend([per_query] * len(chunk))
        same &= [c.memory_ids for c in contexts] == reference[start : start + wave]
    dedup, search = [], []
    for q in queries[:50]:
        vector = memory.pool.embed([q.task.goal])[0]
        t0 = time.perf_counter()
        memory.pool.max_similarity(vector)
        dedup.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        memory.pool.search(vector, "usage_scenario", 5)
        search.append(time.perf_counter() - t0)
    _, load_old_s = _reload(memory, embedder, old=True)
    loaded, load_new_s = _reload(memory, embedder, old=False)
    loaded.query_encoder.size = 0
    same &= [c.memory_ids for c in loaded.retrieve_batch(queries)] == reference
    return (
        f"reme_retrieval experiences={n} index_build_s={index_s:.1f} "
        f"content_index_s={content_s:.1f} "
        f"before_retrieve_p50_ms={statistics.median(single) * 1e3:.2f} "
        f"before_retrieve_p95_ms={_pct(single, 0.95):.2f} "
        f"after_wave{wave}_p50_ms={statistics.median(batched) * 1e3:.2f} "
        f"after_wave{wave}_p95_ms={_pct(batched, 0.95):.2f} "
        f"search_only_p50_ms={statistics.median(search) * 1e3:.3f} "
        f"dedup_check_p50_ms={statistics.median(dedup) * 1e3:.3f} "
        f"before_load_s={load_old_s:.2f} after_load_s={load_new_s:.2f} "
        f"same_selections={same} probes={probes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--probes", type=int, default=192)
    parser.add_argument("--wave", type=int, default=16, help="queries per retrieve_batch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    embedder = SentenceEmbedder()
    for n in args.sizes:
        print(run(n, args.probes, args.wave, args.seed, embedder), flush=True)


if __name__ == "__main__":
    main()
