"""Write, retrieve and load cost of every memory method side by side, at several memory sizes.

    python benchmarks/memory_ops.py --sizes 1000 10000 --out memory_ops.json
    python benchmarks/memory_ops.py --sizes 1000 --methods memco reme gmemory

A size is a number of memory entries: for each method (its ``conf/method/<name>.yaml``
defaults, ``env=alfworld``) and each size N, the memory is filled until it holds N entries,
then timed. An entry is what the method's ``size()`` counts:

- ``memorybank``, ``voyager``, ``generative_agents`` (parity modes): stored tasks (1 per task);
- ``amem`` (lite): notes (1 per task); ``langmem``: store items (1 Episode per task);
- ``memrl``: experiences (1 per task); ``memskill``: memory-bank items (the synthetic
  executor's inserts, 4 per solved task: only solved tasks are written, as MemCo ran it; its
  memory is rebuilt from the replay of its last 5000 tasks when acquisition ends, so 10k items
  must come from fewer tasks than that, ``ITEMS_OF``);
- ``gmemory``, ``evograph``: stored tasks plus insights (1 insight per 5 tasks: 1.2 per task);
- ``memco``: decision records of every agent plus the global records promoted from them (about
  14 per task over the first hundred tasks, 13 over 750); the global ones are built when
  acquisition ends, so while filling they are rebuilt and counted (:func:`entries`, untimed);
- ``reme``: experiences in the pool (2 per task; its similarity dedup drops none of the
  synthetic ones under the composed vectors, some under MiniLM);
- ``none`` and ``icl`` store nothing (``entries`` ``None``, ``write path`` ``n/a``).

Filling writes synthetic tasks in rounds, each half the remaining gap at the entries per task
seen so far, then, within four tasks' entries of the size, top-up tasks that add one entry each
until the memory holds exactly the size (:func:`fill`, :func:`top_up`: a task whose goal ends
with ``SINGLE``, for which the synthetic LLM answers one item per list; G-Memory and EvoGraph-Mem
without an insight; MemCo a one-step dead end, one record). The ``tasks`` column says how many
tasks it took, top-up included; the entry counts between writes, MemCo's global rebuild among
them, are not timed. The row prints ``entries`` beside ``size`` (equal for every method at the
sizes measured) and ``check`` says ``ok`` or ``FAILED: holds X entries, not N (margin 5%)`` when
the entries differ from the size by more than ``MARGIN`` (5%) of it: a memory that merges or
drops the synthetic items reports no numbers under a size it does not hold. Filling gives up after
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
  (ReMe's: a candidate's scenario + content more than 0.5 cosine to a stored usage scenario, as
  its official code): in the composed word vectors none is dropped; under MiniLM (sizes up to
  ``--minilm-items``) some are (about 1 in 6 at 1k) and the fill writes more tasks; answers
  drawn from the prompt's words made ReMe's pool collapse to 377 entries from 10k tasks, and
  means of MiniLM's own word vectors to 1 entry. LangMem's manager needs tool calls from the
  LLM, so its store is filled with ``store.put`` of the Episode items the manager would have
  written. G-Memory and
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
composed from words (a text = the normalised mean of its words' vectors, each word a fixed random
unit vector seeded by its CRC-32, MiniLM's 384 dimensions; ``vectors`` column ``words``), for
items and queries alike (one geometry, so similarity thresholds behave), so a 10k / 100k
measurement times the memory operation, not 10^5 MiniLM encodes on 2 cores (nor MiniLM's ~10 ms
per query). Distinct word draws are near-orthogonal there (cosine 0.01 +- 0.06), so no dedup
merges them; a shared goal word still makes a query near its tasks. ``--embedder fake`` (the same
random word vectors at 256 dimensions, no model) is for the tests.

One process; a row is printed as soon as its (method, size) is measured (a method that raises,
or runs past ``--time-limit`` seconds, gets a row saying so, and the others go on). ``--out``
writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
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
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memco_memory import DOMAINS, OBJECTS, RECEPTACLES, episode  # noqa: E402

from memarena.core import MemoryQuery, MemoryServices, Observation  # noqa: E402
from memarena.core.llm_types import Completion  # noqa: E402
from memarena.core.types import Feedback, Outcome, Step, Task, Trajectory, Usage  # noqa: E402

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
TOPUP = 2 * 10**7  # task ids of the top-up's one-step tasks (MemCo) start here
ANSWER_WORDS = 5  # words per string the synthetic LLM answers
ITEMS = 2  # items per list the synthetic LLM answers (experiences, MemSkill operations, ...)
# MemSkill's executor answers 4 inserts per solved task: its memory is rebuilt at the end of
# acquisition from the replay of its last 5000 tasks (replay_pool), so 10k entries must come
# from fewer tasks (~4200 at 60% solved; 2 per solved task would need ~8300)
ITEMS_OF = {"memskill": 4}
SINGLE = "(one note)"  # a top-up task's goal ends with this: the synthetic LLM answers 1 item
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

    def __init__(self, seed: int = 0, items: int = ITEMS) -> None:
        self.rng = random.Random(seed)
        self.usage = Usage()
        self.list_items = items  # items per list answer
        self.items = items  # ... for the request at hand (1 for one naming a top-up task)

    def generate(self, requests: list[Any]) -> list[Completion]:
        out = []
        for request in requests:
            prompt = " ".join(str(m.get("content", "")) for m in getattr(request, "messages", []))
            self.items = 1 if SINGLE in prompt else self.list_items
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
            most = int(schema.get("maxItems", self.items))
            n = max(int(schema.get("minItems", 1)), min(self.items, most))
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
def word_vector(word: str, dim: int) -> np.ndarray:
    """A fixed random unit vector for ``word`` (a Gaussian seeded by its CRC-32): two distinct
    words are near-orthogonal (cosine ~ N(0, 1/dim)), the same in every process."""
    row = np.random.default_rng(zlib.crc32(word.encode())).standard_normal(dim)
    return (row / np.linalg.norm(row)).astype(np.float32)


def compose(texts: list[str], vector: Any, dim: int) -> np.ndarray:
    """Each text as the normalised mean of its words' vectors (``vector(word)``; its first 64
    words)."""
    rows = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        words = re.findall(r"\w+", str(text).lower())[:64] or ["empty"]
        rows[i] = np.mean([vector(w) for w in words], axis=0)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-6)


class FakeEmbedder:
    """Random word vectors composed (no model; for the tests): distinct word draws are
    near-orthogonal at 256 dimensions, so a similarity dedup keeps them apart."""

    name = "fake"
    dim = 256

    def __init__(self) -> None:
        self.cache: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        if word not in self.cache:
            self.cache[word] = word_vector(word, self.dim)
        return self.cache[word]

    def encode(self, texts: list[str]) -> np.ndarray:
        return compose(list(texts), self._word, self.dim)

    def close(self) -> None:
        return None


class ItemEmbedder:
    """``base`` (MiniLM) for every text; with ``words`` on (a size above ``--minilm-items``),
    the normalised mean of fixed random word vectors (:func:`word_vector`, ``base.dim``
    dimensions) for items and queries alike. Random, not MiniLM's own word vectors: those share
    a common direction (mean pairwise cosine 0.25 over ``LEXICON``), so a mean of 10 random
    words and one of 5 others are 0.52-0.9 cosine apart, all above ReMe's 0.5 dedup threshold
    (its pool held 1 experience at 10k); random ones keep distinct draws near-orthogonal
    (0.01 +- 0.06 at 384 dimensions; measured over 500 x 500 such pairs)."""

    def __init__(self, base: Any) -> None:
        self.base, self.name, self.dim = base, base.name, base.dim
        self.words = False
        self.cache: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        if word not in self.cache:
            self.cache[word] = word_vector(word, self.dim)
        return self.cache[word]

    def encode(self, texts: list[str]) -> np.ndarray:
        if not self.words:
            return self.base.encode(list(texts))
        return compose(list(texts), self._word, self.dim)

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


def graph_write(
    memory: Any, method: str, pairs: list[tuple[Any, Any]], insights: bool = True
) -> None:
    """G-Memory / EvoGraph-Mem: each task's query node (goal embedding, steps, status) straight
    into the query graph, and one insight per 5 tasks (what the insight fine-tuning / the graph
    controller would add; ``insights`` off: none, the fill's top-up), goals embedded 256 at a
    time."""
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
            if insights and memory.n_observed % 5 == 0:
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


def small_stream(seed: int = 0, start: int = TOPUP) -> Iterator[tuple[Any, Any]]:
    """The top-up's tasks: one failed ``look`` that changed nothing, in one of the stream's
    domains (MemCo induces one record from it once its agent holds that dead end; the other
    methods write it as any task)."""
    rng = random.Random(seed)
    for i in itertools.count(start):
        domain, obj, dest = rng.choice(DOMAINS), rng.choice(OBJECTS), rng.choice(RECEPTACLES)
        goal = f"Your task is to: put a {obj} in {dest}."
        task = Task(f"syn/{domain}/train/{i:08d}", "alfworld", "train", domain, goal, {})
        step = Step("look", "Nothing happens.", 0.0, 0.0, Feedback(True, False, "no_effect"))
        traj = Trajectory(task, "You are in the middle of a room.", [step])
        yield traj, Outcome(False, 0.0, 1, "budget")


def entries(memory: Any) -> int:
    """What the memory will hold once published: ``size()``, with MemCo's global records
    (built from the local ones when acquisition ends) rebuilt and counted while it fills."""
    if hasattr(memory, "global_published") and not memory.global_published():
        local = sum(len(agent.store) for agent in memory.locals.values())
        return local + len(memory.rebuild_global())
    return memory.size() or 0


def marked(stream: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``stream``'s tasks with ``SINGLE`` at the end of their goal: the synthetic LLM answers
    one item per list for them (ReMe: one experience per analysis; MemSkill: one insert, in its
    end-of-acquisition rebuild from the replay too)."""
    for traj, out in stream:
        task = dataclasses.replace(traj.task, goal=f"{traj.task.goal} {SINGLE}")
        yield dataclasses.replace(traj, task=task), out


def top_up(memory: Any, method: str, pair: tuple[Any, Any]) -> None:
    """Write one task so that it adds at most one entry: a :func:`marked` task (one item per
    list answer), G-Memory and EvoGraph-Mem without an insight, MemCo a one-step task
    (:func:`small_stream`)."""
    if method in ("gmemory", "evograph"):
        graph_write(memory, method, [pair], insights=False)
    else:
        write(memory, method, [pair])


def fill(memory: Any, method: str, size: int, stream: Iterator[Any]) -> tuple[int, float]:
    """Write tasks from ``stream`` until ``memory`` holds exactly ``size`` entries (what
    :func:`entries` counts); (tasks written, seconds spent writing). A first round of 1% of the
    size gives the entries per task; each next round writes half the remaining gap at that
    rate (MemCo's rate drifts with the tasks) while the gap is over four tasks' entries; then
    tasks that add one entry each (:func:`top_up`; MemCo's from :func:`small_stream`) are
    written one at a time until the size is reached. The entry counts between writes are not
    timed. Gives up after ``MAX_TASKS_PER_ENTRY`` tasks per entry of the size."""
    written, seconds, held = 0, 0.0, 0
    if method == "none" or not memory.learns:
        return written, seconds
    most = MAX_TASKS_PER_ENTRY * size + 8
    small = small_stream() if method == "memco" else marked(stream)
    while written < most and held < size:
        rate = held / written if written else 0.0  # entries per task so far
        if written and rate and size - held <= 4 * rate:
            batch, one = [next(small)], True  # the top-up: one entry at a time
        elif not written:
            batch, one = list(itertools.islice(stream, max(1, size // 100))), False
        else:  # half the gap at the mean rate: the tasks' spread does not overshoot it
            n = max(1, int(0.5 * (size - held) / rate)) if rate else written  # none kept: double
            batch, one = list(itertools.islice(stream, min(n, most - written))), False
        t0 = time.perf_counter()
        if one:
            top_up(memory, method, batch[0])
        else:
            write(memory, method, batch)
        seconds += time.perf_counter() - t0
        written += len(batch)
        held = entries(memory)
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
    memory = build(copy.deepcopy(cfg), embedder, SyntheticLLM(items=ITEMS_OF.get(method, ITEMS)))
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
        fresh = build(copy.deepcopy(cfg), embedder, SyntheticLLM(items=ITEMS_OF.get(method, ITEMS)))
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
