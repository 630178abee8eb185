"""Search latency of the local Wikipedia backend (bm25s) on a synthetic corpus.

    python benchmarks/wiki_search.py --pages 100000

Writes a corpus of N synthetic pages (titles of 1-3 words, a first paragraph of 3 sentences and
a second paragraph, drawn from a 20k-word Zipf vocabulary), then measures: index build time,
index load time from the cache, and per-search latency for title hits, disambiguation-style
misses ("<title> (x)") and free-text misses (BM25 suggestions). One process, one thread.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memarena.envs.wiki.local import LocalWiki

log = logging.getLogger("benchmarks.wiki_search")


def write_corpus(path: Path, pages: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i:05d}" for i in range(20_000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()

    def words(n: int) -> list[str]:
        return [vocab[i] for i in rng.choice(len(vocab), size=n, p=weights)]

    titles: list[str] = []
    seen: set[str] = set()
    with path.open("w") as fh:
        while len(titles) < pages:
            title = " ".join(w.capitalize() for w in words(int(rng.integers(1, 4))))
            if title in seen:
                title = f"{title} ({words(1)[0]})"
                if title in seen:
                    continue
            seen.add(title)
            titles.append(title)
            first = ". ".join(" ".join(words(12)) for _ in range(3)) + "."
            second = ". ".join(" ".join(words(12)) for _ in range(4)) + "."
            fh.write(json.dumps({"title": title, "text": f"{title} is {first}\n{second}"}) + "\n")
    return titles


def latency(wiki: LocalWiki, queries: list[str]) -> tuple[float, float]:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        wiki.search(q)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory() as tmp:
        corpus, cache = Path(tmp) / "pages.jsonl", Path(tmp) / "cache"
        t0 = time.perf_counter()
        titles = write_corpus(corpus, args.pages)
        log.info(
            "corpus: %d pages, %.1f MB, written in %.1f s",
            args.pages,
            corpus.stat().st_size / 1e6,
            time.perf_counter() - t0,
        )
        t0 = time.perf_counter()
        LocalWiki(path=str(corpus), cache_dir=str(cache))
        log.info("index build: %.1f s", time.perf_counter() - t0)
        t0 = time.perf_counter()
        wiki = LocalWiki(path=str(corpus), cache_dir=str(cache))
        log.info("index load from cache: %.2f s", time.perf_counter() - t0)
        rng = random.Random(0)
        picks = rng.sample(titles, args.queries)
        for name, queries in (
            ("title hit", picks),
            ("disambiguation miss", [f"{t.split(' (')[0]} (zzz)" for t in picks]),
            ("free-text miss", [f"{t.split()[0]} unknownword" for t in picks]),
        ):
            p50, p95 = latency(wiki, queries)
            log.info("search %-20s p50 %.2f ms  p95 %.2f ms", name, p50, p95)


if __name__ == "__main__":
    main()
