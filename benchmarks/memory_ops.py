"""Write, retrieve and load cost of every memory method side by side, at several memory sizes.

    python benchmarks/memory_ops.py --sizes 1000 10000 --out memory_ops.json
    python benchmarks/memory_ops.py --sizes 1000 --methods memco reme gmemory

A size is a number of memory entries: for each method (its ``conf/method/<name>.yaml``
defaults, ``env=alfworld``) and each size N, the memory is filled until it holds N entries,
then timed. An entry is what the method's ``size()`` counts:

- ``memorybank``, ``voyager``, ``generative_agents`` (parity modes): stored tasks (1 per task);
- ``amem`` (lite): notes (1 per task); ``langmem``: store items (1 Episode per task);
- ``memrl``: experiences (1 per task); ``memskill``: memory-bank items (the synthetic
  executor's inserts, 2 per solved task: only solved tasks are written, as MemCo ran it);
- ``gmemory``, ``evograph``: stored tasks plus insights (1 insight per 5 tasks: 1.2 per task);
- ``memco``: decision records of every agent plus the promoted global records (about 14 per
  task over the first hundred tasks, 12 over 4000);
- ``reme``: experiences in the pool (2 per task, less any the similarity dedup drops);
- ``none`` and ``icl`` store nothing (``entries`` ``None``, ``write path`` ``n/a``).

Filling writes synthetic tasks in rounds, each sized by the entries per task seen so far, and
stops when one more task would overshoot the size by more than it closes the gap (the
``tasks`` column says how many it took; the ``memory.size()`` calls between rounds, MemCo's
global rebuild among them, are not timed). The row prints ``entries`` beside ``size`` and
``check`` says ``ok`` or ``FAILED: holds X entries, not N (margin 5%)`` when the entries differ
from the size by more than ``MARGIN`` (5%) of it: a memory that merges or drops the synthetic
items reports no numbers under a size it does not hold. Filling gives up after
``MAX_TASKS_PER_ENTRY`` (4) tasks per entry of the size. The script exits with status 1 when a
row failed (its check, or a method that raised); a row cut by ``--time-limit`` is not a failure.

- write: synthetic ALFWorld-like tasks (the generator of ``memco_memory.py``: 4 scene domains,
  8-20 steps, failures and stalls, 60% solved) observed through the method's public
  ``observe_groups`` in chunks of its ``acquisition_observe_tasks``, as acquisition does. A
  method whose write calls its memory LLM (summaries, importance ratings, insights, the graph
  controller, ReMe's summarizer and judge, ...) gets a synthetic LLM that answers every request
  at once with a varied answer valid for the request's JSON schema (first choice of a choice
  request): the table's ``write path`` says ``observe + synthetic LLM`` and the time is the
  method's own work without LLM latency. Its strings are ``ANSWER_WORDS`` (5) words drawn from
  ``LEXICON`` (771 English words: the names of the Unicode pictographs U+1F300-U+1F64F, fixed
  since Unicode 8), so every answer is distinct and the entries a method derives from them
  (ReMe's experiences, MemSkill's items, summaries, insights) stay apart under a similarity dedup
  (ReMe's: 0.5 cosine of usage scenarios, as its official code), in MiniLM and in the composed
  word vectors alike; answers drawn from the prompt's words made ReMe's pool collapse to 377
  entries from 10k tasks. LangMem's manager needs tool calls from the LLM, so its store is filled
  with ``store.put`` of the Episode items the manager would have written. G-Memory and
  EvoGraph-Mem write at store level too (``queries.add`` of each task's query node, one insight
  per 5 tasks): their observe runs insight fine-tuning every 5 tasks and a clustering merge over
  all stored tasks every 20 (21 s for 1k tasks with the synthetic LLM, over 6 minutes for 10k).
  ``amem`` runs in lite mode (the full mode's note construction is LLM calls). ``write per task
  ms`` is the write time over the tasks written.
- retrieve: 200 held-out tasks' first-step queries (task ids apart from the written ones)
  through ``retrieve_batch`` in waves of 8 (``protocol.concurrency``), as the runner asks at
  episode start, each query's time being its wave's time shared out; a step-granular method
  (MemCo) is asked per step through ``retrieve`` with the episode's past steps, as the runner
  does after the first step. p50 / p95 per query; ``hit`` is the share of queries that got at
  least one memory item.
- save / load: ``save`` (``state_dict`` -> ``memory.json``, the snapshot code) and ``load`` of
  that file into a fresh instance (``load_state_dict``), timed separately.

Embeddings: at a size up to ``--minilm-items`` (default 2000) every text, stored or queried,
goes through the embedded MiniLM (``conf/embedder/minilm.yaml``). Beyond that, vectors are
composed from MiniLM vectors of words (each distinct word embedded once with MiniLM, a text = the
normalised mean of its words' vectors; ``vectors`` column ``words``), for items and queries
alike (one geometry, so similarity thresholds behave), so a 10k / 100k measurement times the
memory operation, not 10^5 MiniLM encodes on 2 cores (nor MiniLM's ~10 ms per query).
``--embedder fake`` (a seeded hash projection, no model) is for the tests.

One process; a row is printed as soon as its (method, size) is measured (a method that raises,
or runs past ``--time-limit`` seconds, gets a row saying so, and the others go on). ``--out``
writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import logging
import random
import re
import signal
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memco_memory import episode  # noqa: E402

from memarena.core import MemoryQuery, MemoryServices, Observation  # noqa: E402
from memarena.core.llm_types import Completion  # noqa: E402
from memarena.core.types import Usage  # noqa: E402

log = logging.getLogger("benchmarks.memory_ops")
ROOT = Path(__file__).resolve().parents[1]

# method -> (conf/method choice, write path)
METHODS: dict[str, tuple[str, str]] = {
    "none": ("none", "n/a (stores nothing)"),
    "icl": ("icl", "n/a (fixed examples)"),
    "memorybank": ("memorybank", "observe + synthetic LLM"),
    "voyager": ("voyager", "observe + synthetic LLM"),
    "generative_agents": ("generative_agents", "observe + synthetic LLM"),
    "amem": ("amem_lite", "observe (lite)"),
    "langmem": ("langmem", "store.put"),
    "memrl": ("memrl", "observe + synthetic LLM"),
    "memskill": ("memskill", "observe + synthetic LLM"),
    "gmemory": ("gmemory", "queries.add + insights.add"),
    "evograph": ("evograph", "queries.add + graph.add"),
    "memco": ("memco", "observe"),
    "reme": ("reme", "observe + synthetic LLM"),
}
COLUMNS = ("method", "size", "entries", "check", "tasks", "write path", "vectors",
           "write total s", "write per task ms", "retrieve p50 ms", "retrieve p95 ms", "hit",
           "save s", "load s")  # fmt: skip
WAVE = 8
MARGIN = 0.05  # a row fails when its memory's entries differ from the size by more than this
MAX_TASKS_PER_ENTRY = 4  # filling gives up after this many tasks per entry of the size
HELD_OUT = 10**7  # task ids of the retrieval queries start here, apart from the written tasks
ANSWER_WORDS = 5  # words per string the synthetic LLM answers
# 771 English words, the names of the Unicode pictographs U+1F300-U+1F64F (block complete since
# Unicode 8, so the same list in every Python 3): apple, bicycle, candle, ...
LEXICON = sorted({
    word.lower()
    for cp in range(0x1F300, 0x1F650)
    for word in unicodedata.name(chr(cp), "").split()
    if re.fullmatch(r"[A-Z]{4,10}", word)
})  # fmt: skip


# -- the synthetic memory LLM -----------------------------------------------------------------
class SyntheticLLM:
    """Answers every request at once: a varied value valid for its JSON schema (strings:
    ``ANSWER_WORDS`` words drawn from ``LEXICON``, so no two answers are alike and a similarity
    dedup keeps them apart), the first of its choices, else a short sentence. Numbers are drawn
    in their range (importance ratings vary); EvoGraph's controller keeps the shown insights
    and adds one; a judge accepts."""

    name = "synthetic-llm"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.usage = Usage()

    def generate(self, requests: list[Any]) -> list[Completion]:
        out = []
        for request in requests:
            if getattr(request, "json_schema", None) is not None:
                text = json.dumps(self._answer(request.json_schema))
            elif getattr(request, "choices", None):
                text = request.choices[0]
            else:
                text = self._text(200)
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=3))
        self.usage.calls += 1
        self.usage.requests += len(requests)
        return out

    def _text(self, limit: int) -> str:
        return " ".join(self.rng.sample(LEXICON, ANSWER_WORDS))[: max(1, limit)]

    def _value(self, schema: dict) -> Any:
        if "enum" in schema:
            return schema["enum"][0]
        if "anyOf" in schema:
            return self._value(schema["anyOf"][0])
        kind = schema.get("type")
        kind = kind[0] if isinstance(kind, list) else kind
        if kind == "object":
            props = schema.get("properties", {})
            return {k: self._value(v) for k, v in props.items()}  # optional ones too
        if kind == "array":
            n = max(int(schema.get("minItems", 1)), min(2, int(schema.get("maxItems", 2))))
            return [self._value(schema.get("items", {})) for _ in range(n)]
        if kind == "integer":
            lo, hi = int(schema.get("minimum", 1)), int(schema.get("maximum", 10))
            return self.rng.randint(lo, max(lo, hi))
        if kind == "number":
            lo, hi = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
            return round(self.rng.uniform(lo, max(lo, hi)), 3)
        if kind == "boolean":
            return True
        return self._text(int(schema.get("maxLength", 200)))

    def _answer(self, schema: dict) -> Any:
        props = schema.get("properties", {})
        if "add" in props and "insight" in props:  # EvoGraph's graph controller
            answer = {"add": True, "insight": self._text(160)}
            for key, sub in props.items():
                if key not in ("add", "insight"):
                    answer[key] = {"op": sub["properties"]["op"]["enum"][0]}
            return answer
        value = self._value(schema)
        if "valid" in props and "score" in props:  # a judge (ReMe): accept
            value.update(valid=True, score=props["score"].get("maximum", 1.0))
        return value

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None


# -- embedders ----------------------------------------------------------------------------------
class FakeEmbedder:
    """A seeded projection of hashed word counts (no model; for the tests)."""

    name = "fake"
    dim = 32

    def __init__(self) -> None:
        self.proj = np.random.default_rng(0).normal(size=(4096, self.dim)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", str(text).lower()):
                rows[i] += self.proj[hash(word) % 4096]
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-6)

    def close(self) -> None:
        return None


class ItemEmbedder:
    """``base`` for queries; for stored items (``words`` on) the normalised mean of the base
    vectors of their words, each distinct word embedded once."""

    def __init__(self, base: Any) -> None:
        self.base, self.name, self.dim = base, base.name, base.dim
        self.words = False
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        if not self.words:
            return self.base.encode(list(texts))
        tokens = [re.findall(r"\w+", str(t).lower())[:64] or ["empty"] for t in texts]
        new = sorted({w for ws in tokens for w in ws} - self.cache.keys())
        if new:
            self.cache.update(zip(new, np.asarray(self.base.encode(new)), strict=True))
        rows = np.stack([np.mean([self.cache[w] for w in ws], axis=0) for ws in tokens])
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-6)
        return rows.astype(np.float32)

    def close(self) -> None:
        return None


def base_embedder(kind: str) -> Any:
    if kind == "fake":
        return FakeEmbedder()
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    return instantiate(OmegaConf.load(ROOT / "conf" / "embedder" / "minilm.yaml"))


# -- building and filling -----------------------------------------------------------------------
def method_config(choice: str) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=[f"method={choice}", "env=alfworld", "logger=none"])
    return cfg.method


def build(cfg: Any, embedder: ItemEmbedder, llm: SyntheticLLM) -> Any:
    from memarena.pipeline.build import build_part

    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=lambda: embedder)
    return build_part(cfg, services=services, env_name="alfworld")


def write(memory: Any, method: str, pairs: list[tuple[Any, Any]]) -> None:
    if method == "none" or not memory.learns:
        return
    if method == "langmem":
        for traj, out in pairs:
            index = int(traj.task.id.rsplit("/", 1)[-1])  # the task's number: one key per task
            rng = random.Random(index)
            actions = "; ".join(s.action for s in traj.steps[:6])
            content = {
                "observation": traj.task.goal,
                "thoughts": " ".join(rng.sample(LEXICON, 8)),
                "action": actions,
                "result": "solved" if out.success else "failed",
            }
            value = {"kind": "Episode", "content": content}
            memory.store.put(memory.namespace, f"ep-{index:07d}", value)
        return
    if method in ("gmemory", "evograph"):
        graph_write(memory, method, pairs)
        return
    chunk = max(1, int(getattr(memory, "acquisition_observe_tasks", 1) or 1))
    for start in range(0, len(pairs), chunk):
        memory.observe_groups([[pair] for pair in pairs[start : start + chunk]])


def graph_write(memory: Any, method: str, pairs: list[tuple[Any, Any]]) -> None:
    """G-Memory / EvoGraph-Mem: each task's query node (goal embedding, steps, status) straight
    into the query graph, and one insight per 5 tasks (what the insight fine-tuning / the graph
    controller would add), goals embedded 256 at a time."""
    from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryNode

    rng = random.Random(memory.n_observed)  # a call goes on where the last one stopped
    for start in range(0, len(pairs), 256):
        chunk = pairs[start : start + 256]
        vectors = np.asarray(memory.services.embedder.encode([t.task.goal for t, _ in chunk]))
        for (traj, out), vector in zip(chunk, vectors.astype(np.float32), strict=True):
            node = QueryNode(
                id=traj.task.id,
                goal=traj.task.goal,
                status=RESOLVED if out.success else FAILED,
                domain=traj.task.domain,
                initial=traj.initial_observation[:300],
                steps=[(s.action, s.observation[:300]) for s in traj.steps],
            )
            memory.queries.add(node, vector)
            memory.n_observed += 1
            if memory.n_observed % 5 == 0:
                insight = " ".join(rng.sample(LEXICON, 8))
                if method == "evograph":
                    memory.graph.add(insight, traj.task.id)
                else:
                    memory.insights.add(insight, [traj.task.id])


def task_stream(seed: int = 0, start: int = 0) -> Iterator[tuple[Any, Any]]:
    """Synthetic (trajectory, outcome) pairs, numbered from ``start``, without end."""
    rng = random.Random(seed)
    for i in itertools.count(start):
        yield episode(rng, i)


def fill(memory: Any, method: str, size: int, stream: Iterator[Any]) -> tuple[int, float]:
    """Write tasks from ``stream`` until ``memory`` holds ``size`` entries; (tasks written,
    seconds spent writing). A first round of 1% of the size gives the entries per task; each
    next round writes 80% of the remaining gap at that rate (MemCo's rate drifts with the
    tasks), until one more task would overshoot by more than it closes. The ``size()`` calls
    between rounds are not timed. Gives up after ``MAX_TASKS_PER_ENTRY`` tasks per entry."""
    written, seconds, entries = 0, 0.0, 0
    if method == "none" or not memory.learns:
        return written, seconds
    while written < MAX_TASKS_PER_ENTRY * size + 8:
        rate = entries / written if written else 0.0  # entries per task so far
        if written and size - entries <= rate / 2:
            break
        if not written:
            n = max(1, size // 100)
        elif not rate:
            n = written  # nothing kept yet: double the tasks
        else:
            n = max(1, int(0.8 * (size - entries) / rate))
        n = min(n, MAX_TASKS_PER_ENTRY * size + 8 - written)
        batch = list(itertools.islice(stream, n))
        t0 = time.perf_counter()
        write(memory, method, batch)
        seconds += time.perf_counter() - t0
        written += n
        entries = memory.size() or 0
    return written, seconds


def check(entries: int | None, size: int, margin: float = MARGIN) -> str:
    """``ok``, or ``FAILED: ...`` when ``entries`` is more than ``margin`` of ``size`` away
    (``-``: the method stores nothing)."""
    if entries is None:
        return "-"
    if abs(entries - size) > margin * size:
        return f"FAILED: holds {entries} entries, not {size} (margin {margin:.0%})"
    return "ok"


def queries(pairs: list[tuple[Any, Any]], step: bool, rng: random.Random) -> list[MemoryQuery]:
    out = []
    for traj, _ in pairs:
        k = rng.randrange(len(traj.steps)) if step and traj.steps else 0
        obs = traj.steps[k - 1].observation if k else traj.initial_observation
        actions = sorted({s.action for s in traj.steps} | {"look", "inventory"})
        out.append(MemoryQuery(traj.task, Observation(obs, traj.task.goal, actions), k,
                               traj.steps[:k]))  # fmt: skip
    return out


def retrieve_times(memory: Any, qs: list[MemoryQuery]) -> tuple[list[float], float]:
    """Per-query seconds and the share of queries that got at least one item."""
    times, hits = [], 0
    if memory.granularity == "step":
        for q in qs:
            t0 = time.perf_counter()
            ctx = memory.retrieve(q)
            times.append(time.perf_counter() - t0)
            hits += bool(ctx.memory_ids)
        return times, hits / max(len(qs), 1)
    for start in range(0, len(qs), WAVE):
        wave = qs[start : start + WAVE]
        t0 = time.perf_counter()
        contexts = memory.retrieve_batch(wave)
        times += [(time.perf_counter() - t0) / len(wave)] * len(wave)
        hits += sum(bool(c.memory_ids) for c in contexts)
    return times, hits / max(len(qs), 1)


def _pct(xs: list[float], q: float) -> float:
    return sorted(xs)[int(q * (len(xs) - 1))] * 1e3 if xs else float("nan")


def measure(
    method: str, size: int, embedder: ItemEmbedder, n_queries: int = 200, minilm_items: int = 2000
) -> dict[str, Any]:
    """One table row: ``method`` filled until it holds ``size`` entries, then timed."""
    choice, path = METHODS[method]
    cfg = method_config(choice)
    held_out = list(itertools.islice(task_stream(seed=1, start=HELD_OUT), n_queries))
    memory = build(copy.deepcopy(cfg), embedder, SyntheticLLM())
    embedder.words = size > minilm_items
    tasks, write_s = fill(memory, method, size, task_stream())
    memory.freeze()
    memory.begin_phase("eval")
    views = memory.eval_views()
    memory.set_view(views[0])
    qs = queries(held_out, memory.granularity == "step", random.Random(1))
    times, hit = retrieve_times(memory, qs)  # queries embedded as the items (one geometry)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        memory.save(Path(tmp))
        save_s = time.perf_counter() - t0
        fresh = build(copy.deepcopy(cfg), embedder, SyntheticLLM())
        t0 = time.perf_counter()
        fresh.load(Path(tmp))
        load_s = time.perf_counter() - t0
    embedder.words = False
    vectors = "words" if size > minilm_items else embedder.base.name
    if memory.services.embedder_if_built is None and fresh.services.embedder_if_built is None:
        vectors = "-"  # the method embeds nothing
    entries = memory.size()
    return {
        "method": method,
        "size": size,
        "entries": entries,
        "check": check(entries, size),
        "tasks": tasks,
        "write path": path,
        "vectors": vectors,
        "write total s": round(write_s, 3),
        "write per task ms": round(write_s / max(tasks, 1) * 1e3, 3),
        "retrieve p50 ms": round(_pct(times, 0.5), 3),
        "retrieve p95 ms": round(_pct(times, 0.95), 3),
        "hit": round(hit, 3),
        "save s": round(save_s, 3),
        "load s": round(load_s, 3),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


class time_limit:  # noqa: N801  (a context manager used like a function)
    """``TimeoutError`` after ``seconds`` of one (method, size) measurement (0: no limit)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = float(seconds)

    def __enter__(self) -> None:
        if self.seconds > 0:
            signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def _expire(self, *_: Any) -> None:
        raise TimeoutError(f"not done after {self.seconds:.0f} s")

    def __exit__(self, *_: Any) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)


def run(
    methods: list[str],
    sizes: list[int],
    embedder: str = "minilm",
    n_queries: int = 200,
    minilm_items: int = 2000,
    out: Path | None = None,
    echo: bool = True,
    limit_s: float = 0.0,
) -> list[dict[str, Any]]:
    items = ItemEmbedder(base_embedder(embedder))
    rows: list[dict[str, Any]] = []
    if echo:
        print(table([]), flush=True)
    for size in sizes:
        for method in methods:
            try:
                with time_limit(limit_s):
                    row = measure(method, size, items, n_queries, minilm_items)
            except Exception as exc:  # one broken or too slow method does not end the table
                if not isinstance(exc, TimeoutError):
                    log.exception("memory_ops: %s at %d items failed", method, size)
                row = dict.fromkeys(COLUMNS, "-") | {"method": method, "size": size}
                timeout = isinstance(exc, TimeoutError)
                error = " ".join(f"{type(exc).__name__}: {exc}".split())  # one table line
                why = f"not done in {limit_s:.0f} s" if timeout else error
                row["write path"] = f"{METHODS[method][1]} ({why})"[:120]
                if not timeout:
                    row["check"] = f"FAILED: {type(exc).__name__}"
            items.words = False
            rows.append(row)
            if echo:
                print(table([row]).splitlines()[-1], flush=True)
            if out is not None:
                out.write_text(json.dumps(rows, indent=1))
    return rows


def failed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose check failed (entries off the size by more than the margin, an error)."""
    return [r for r in rows if str(r["check"]).startswith("FAILED")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1000, 10000],
        help=f"memory sizes in entries (what each method's size() counts); a row whose memory "
        f"holds entries more than {MARGIN * 100:.0f}%% off its size is marked FAILED and the exit "
        f"status is 1",
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--minilm-items",
        type=int,
        default=2000,
        help="above this size, item vectors are composed from word vectors",
    )
    parser.add_argument("--embedder", choices=["minilm", "fake"], default="minilm")
    parser.add_argument("--out", type=Path, default=None, help="JSON file for the rows")
    parser.add_argument(
        "--time-limit", type=float, default=0.0, help="seconds per (method, size); 0: no limit"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    rows = run(args.methods, args.sizes, args.embedder, args.queries, args.minilm_items, args.out,
               limit_s=args.time_limit)  # fmt: skip
    print()
    print(table(rows))
    if bad := failed(rows):
        which = ", ".join(f"{r['method']} at {r['size']}" for r in bad)
        print(f"\n{len(bad)} row(s) FAILED: {which}")
        sys.exit(1)


if __name__ == "__main__":
    main()
