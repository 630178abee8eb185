"""Embedding-based memory methods at scale (issue 23 part 2): the batched retrieval of a wave
gives the same selections as one query at a time and as a brute-force cosine ranking; a
snapshot stores the embeddings and a load never embeds the stored texts again; an old snapshot
without them, or one made with another embedder, still loads (it re-embeds)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from doubles import FakeEmbedder
from needs import need_module

from memarena.core import MemoryQuery, MemoryServices, Observation, Outcome, Task, Trajectory
from memarena.memory.gmemory import GMemory
from memarena.memory.reme import Experience, ReMe
from memarena.memory.vectors import QueryEncoder, RowMatrix, top_k


class CountingEmbedder(FakeEmbedder):
    """FakeEmbedder that records every encode call's texts."""

    def __init__(self, name: str = "fake-embedder") -> None:
        self.name = name
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return super().encode(texts)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


def _goal(rng: np.random.Generator) -> str:
    return "v:" + ",".join(f"{x:.3f}" for x in rng.normal(size=3))


def _query(i: int, goal: str) -> MemoryQuery:
    task = Task(id=f"q{i}", env="pddl", split="test", domain="d", goal=goal)
    return MemoryQuery(task=task, observation=Observation(text="start", goal=goal))


# -- shared helpers -------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(5, 3), (300, 1), (300, 5), (5000, 5), (5000, 64), (1000, 1000)])
def test_top_k_is_the_stable_full_sort_with_ties(n, k):
    rng = np.random.default_rng(n + k)
    scores = rng.integers(0, 20, size=n).astype(np.float32)  # many ties
    expected = np.argsort(-scores, kind="stable")[:k]
    assert top_k(scores, k).tolist() == expected.tolist()
    floats = rng.normal(size=n).astype(np.float32)
    assert top_k(floats, k).tolist() == np.argsort(-floats, kind="stable")[:k].tolist()
    assert top_k(floats, 0).size == 0 and top_k(np.zeros(0, np.float32), 3).size == 0


def test_row_matrix_appends_in_chunks_and_keeps_rows():
    rows = RowMatrix()
    data = np.arange(12, dtype=np.float32).reshape(6, 2)
    for row in data:
        rows.append(row)
    buffer = rows._buffer
    rows.append(data[:2])
    assert rows._buffer is buffer  # no copy per append
    assert np.array_equal(rows.array, np.vstack([data, data[:2]]))
    rows.keep([0, 7])
    assert np.array_equal(rows.array, data[[0, 1]])
    with pytest.raises(ValueError, match="dims"):
        rows.append(np.zeros(3, np.float32))


def test_query_encoder_one_call_per_wave_and_bounded_lru():
    embedder = CountingEmbedder()
    encode = QueryEncoder(embedder.encode, size=2)
    out = encode(["v:1,0,0", "v:0,2,0", "v:1,0,0"])
    assert embedder.calls == [["v:1,0,0", "v:0,2,0"]]  # one call, each text once
    assert np.allclose(out, [[1, 0, 0], [0, 1, 0], [1, 0, 0]])
    encode(["v:0,2,0", "v:0,0,3"])  # v:0,2,0 cached; the LRU now drops v:1,0,0
    assert embedder.calls[-1] == ["v:0,0,3"]
    encode(["v:1,0,0"])
    assert embedder.calls[-1] == ["v:1,0,0"] and len(embedder.calls) == 3


# -- ReMe -----------------------------------------------------------------------------------------
def _reme(embedder: CountingEmbedder, n: int = 200, seed: int = 0, **kw) -> ReMe:
    memory = ReMe(services=MemoryServices(embedder_factory=lambda: embedder), **kw)
    rng = np.random.default_rng(seed)
    for i in range(n):
        e = Experience("", _goal(rng), f"content {i}", task_query=_goal(rng))
        e.id = memory.pool.new_id()
        memory.pool.add(e)
    memory.begin_phase("eval")
    return memory


def _reference_reme(memory: ReMe, goal: str) -> list[str]:
    """The per-query reference: cosine to every usage scenario, full stable sort, top-K."""
    experiences = list(memory.pool.items.values())
    rows = np.asarray(FakeEmbedder().encode([e.when_to_use for e in experiences]))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    q = FakeEmbedder().encode([goal])[0]
    sims = rows @ (q / np.linalg.norm(q))
    return [experiences[i].id for i in np.argsort(-sims, kind="stable")[: memory.top_k]]


def test_reme_batched_retrieval_matches_per_query_and_reference():
    rng = np.random.default_rng(7)
    goals = [_goal(rng) for _ in range(16)]
    queries = [_query(i, g) for i, g in enumerate(goals)]
    single = _reme(CountingEmbedder())
    per_query = [single.retrieve(q).memory_ids for q in queries]
    embedder = CountingEmbedder()
    batched = _reme(embedder)
    batched.pool.matrix("usage_scenario")
    before = len(embedder.calls)
    contexts = batched.retrieve_batch(queries)
    assert embedder.calls[before:] == [goals]  # one encode call for the whole wave
    assert [c.memory_ids for c in contexts] == per_query
    assert per_query == [_reference_reme(batched, g) for g in goals]
    assert all(len(ids) == 5 for ids in per_query)
    assert batched.shown["q3"] == contexts[3]
    batched.retrieve_batch(queries[:4])  # the same goals again: from the LRU, no call
    assert len(embedder.calls) == before + 1


def test_reme_snapshot_stores_embeddings_and_load_does_not_embed_them(tmp_path):
    memory = _reme(CountingEmbedder())
    memory.save(tmp_path)
    blob = json.loads((tmp_path / "memory.json").read_text())
    vectors = blob["state"]["pool"]["vectors"]
    assert set(vectors) >= {"usage_scenario"}
    assert vectors["usage_scenario"]["embedder"] == {"name": "fake-embedder", "dim": 3}
    assert vectors["usage_scenario"]["rows"] == 200 and vectors["usage_scenario"]["dim"] == 3

    embedder = CountingEmbedder()
    loaded = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
    loaded.load(tmp_path)
    loaded.begin_phase("eval")
    rng = np.random.default_rng(3)
    queries = [_query(i, _goal(rng)) for i in range(8)]
    got = [c.memory_ids for c in loaded.retrieve_batch(queries)]
    assert embedder.calls == [[q.task.goal for q in queries]]  # only the queries
    assert got == [memory.retrieve(q).memory_ids for q in queries]
    # a deletion keeps the stored rows in step, nothing embedded
    loaded.pool.remove(["exp-1", "exp-5"])
    assert loaded.retrieve(queries[0]).memory_ids == _reference_reme(loaded, queries[0].task.goal)
    assert embedder.texts == [q.task.goal for q in queries]
    assert loaded.state_dict()["pool"]["vectors"]["usage_scenario"]["rows"] == 198

    # a deletion right after the load, before the stored rows were first used
    fresh = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
    fresh.load(tmp_path)
    fresh.begin_phase("eval")
    fresh.pool.remove(["exp-1", "exp-5"])
    assert fresh.retrieve(queries[0]).memory_ids == _reference_reme(fresh, queries[0].task.goal)
    assert embedder.texts == [q.task.goal for q in queries] + [queries[0].task.goal]


def test_reme_old_snapshot_without_embeddings_reembeds(tmp_path):
    memory = _reme(CountingEmbedder())
    memory.save(tmp_path)
    path = tmp_path / "memory.json"
    blob = json.loads(path.read_text())
    del blob["state"]["pool"]["vectors"]
    path.write_text(json.dumps(blob))
    embedder = CountingEmbedder()
    loaded = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
    loaded.load(tmp_path)
    loaded.begin_phase("eval")
    q = _query(0, "v:1,2,3")
    assert loaded.retrieve(q).memory_ids == memory.retrieve(q).memory_ids
    assert len(embedder.texts) == 200 + 1  # the 200 scenarios, then the query


def test_reme_snapshot_of_another_embedder_reembeds_with_a_warning(tmp_path, caplog):
    memory = _reme(CountingEmbedder(name="old-embedder"))
    memory.save(tmp_path)
    embedder = CountingEmbedder()
    loaded = ReMe(services=MemoryServices(embedder_factory=lambda: embedder))
    loaded.load(tmp_path)
    loaded.begin_phase("eval")
    with caplog.at_level(logging.WARNING, logger="memarena.memory.vectors"):
        ids = loaded.retrieve(_query(0, "v:1,2,3")).memory_ids
    assert "old-embedder" in caplog.text
    assert ids == memory.retrieve(_query(0, "v:1,2,3")).memory_ids
    assert len(embedder.texts) == 200 + 1


# -- G-Memory (and EvoGraph-Mem, which inherits its retrieval) ------------------------------------
def _gmemory(embedder: CountingEmbedder, n: int = 120) -> GMemory:
    services = MemoryServices(embedder_factory=lambda: embedder)
    memory = GMemory(services=services, env_name="pddl", use_llm=False, k=3, n_successes=2)
    rng = np.random.default_rng(11)
    for i in range(n):
        task = Task(id=f"t{i}", env="pddl", split="train", domain="d", goal=_goal(rng))
        success = bool(i % 3)
        memory.observe(
            Trajectory(task=task, initial_observation="start", steps=[]),
            Outcome(success=success, progress=float(success), steps=0, status="success"),
        )
    memory.freeze()
    return memory


def test_gmemory_batched_retrieval_matches_per_query():
    rng = np.random.default_rng(5)
    queries = [_query(i, _goal(rng)) for i in range(12)]
    single = _gmemory(CountingEmbedder())
    per_query = [single.retrieve(q) for q in queries]
    embedder = CountingEmbedder()
    batched = _gmemory(embedder)
    before = len(embedder.calls)
    assert batched.retrieve_batch(queries) == per_query
    assert embedder.calls[before:] == [[q.task.goal for q in queries]]
    assert any(c.memory_ids for c in per_query)
    # the reference: past successes are solved tasks in cosine order (threshold 0.3)
    graph = batched.queries
    for q, ctx in zip(queries, per_query, strict=True):
        sims = graph.similarities(FakeEmbedder().encode([q.task.goal])[0])
        shown = [m for m in ctx.memory_ids if m in graph.nodes]
        assert shown == sorted(shown, key=lambda m: -sims[graph.row[m]])


def test_gmemory_snapshot_load_uses_stored_embeddings(tmp_path, caplog):
    memory = _gmemory(CountingEmbedder())
    memory.save(tmp_path)
    blob = json.loads((tmp_path / "memory.json").read_text())
    assert blob["state"]["queries"]["embedder"] == {"name": "fake-embedder", "dim": 3}
    queries = [_query(i, g) for i, g in enumerate(["v:1,0,0", "v:0,1,1", "v:-1,2,0"])]
    expected = memory.retrieve_batch(queries)

    embedder = CountingEmbedder()
    loaded = GMemory(
        services=MemoryServices(embedder_factory=lambda: embedder),
        env_name="pddl",
        use_llm=False,
        k=3,
        n_successes=2,
    )
    loaded.load(tmp_path)
    loaded.freeze()
    assert loaded.retrieve_batch(queries) == expected
    assert embedder.calls == [[q.task.goal for q in queries]]  # no stored goal re-embedded

    other = CountingEmbedder(name="another-embedder")
    changed = GMemory(
        services=MemoryServices(embedder_factory=lambda: other),
        env_name="pddl",
        use_llm=False,
        k=3,
        n_successes=2,
    )
    changed.load(tmp_path)
    changed.freeze()
    with caplog.at_level(logging.WARNING, logger="memarena.memory.vectors"):
        assert changed.retrieve_batch(queries) == expected  # same vectors from the fake
    assert "another-embedder" in caplog.text and len(other.texts) == 120 + 3


# -- the baselines' VectorIndex (MemoryBank, Voyager, Generative Agents, A-Mem, MemRL, MemSkill) --
def _reference_search(index, vector, k, allowed=None):
    sims = index.matrix @ (vector / np.linalg.norm(vector))
    order = np.argsort(-sims, kind="stable")
    hits = [index.ids[n] for n in order if allowed is None or allowed(index.ids[n])]
    return hits[:k]


def test_vector_index_search_matches_full_sort_with_and_without_filter():
    from memarena.memory.episodic import VectorIndex

    rng = np.random.default_rng(2)
    index = VectorIndex()
    for i in range(3000):  # rounded coordinates: many exact ties
        index.add(f"e{i}", np.round(rng.normal(size=4), 1) + 0.01)
    rare = {f"e{i}" for i in range(0, 3000, 97)}  # the filter rejects most rows
    for _ in range(20):
        v = rng.normal(size=4).astype(np.float32)
        for k in (1, 5, 40):
            assert [i for i, _ in index.search(v, k)] == _reference_search(index, v, k)
            for allowed in (lambda e: e.endswith("3"), rare.__contains__, lambda e: False):
                got = [i for i, _ in index.search(v, k, allowed)]
                assert got == _reference_search(index, v, k, allowed)


def test_vector_index_round_trip_keeps_rows_bit_for_bit():
    from memarena.memory.episodic import VectorIndex

    index = VectorIndex()
    rng = np.random.default_rng(4)
    for i in range(50):
        index.add(f"e{i}", rng.normal(size=3))
    blob = json.loads(json.dumps(index.to_dict(FakeEmbedder())))
    assert blob["embedder"] == {"name": "fake-embedder", "dim": 3}
    again = VectorIndex.from_dict(blob)
    assert again.ids == index.ids and np.array_equal(again.matrix, index.matrix)
    again.add("new", np.ones(3))  # grows after a load
    assert len(again) == 51 and again.search(np.ones(3), 1)[0][0] == "new"
    old = {k: v for k, v in blob.items() if k != "embedder"}  # an older snapshot
    assert VectorIndex.from_dict(old).ids == index.ids


def _baseline(cls, embedder: CountingEmbedder, **kw):
    from doubles import FakeLLM

    llm = FakeLLM()  # "{}": every summary falls back to the task's goal
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=lambda: embedder)
    return cls(services=services, **kw)


@pytest.mark.parametrize("method", ["memorybank", "memrl", "generative_agents"])
def test_baseline_snapshot_load_embeds_only_queries_and_reembeds_for_another_embedder(
    method, tmp_path, caplog
):
    from baseline_helpers import episode
    from baseline_helpers import query as bquery

    from memarena.memory.generative_agents import GenerativeAgents
    from memarena.memory.memorybank import MemoryBank
    from memarena.memory.memrl import MemRL

    cls, kw = {
        "memorybank": (MemoryBank, {}),
        "memrl": (MemRL, {"epsilon": 0.0}),
        "generative_agents": (GenerativeAgents, {}),
    }[method]
    memory = _baseline(cls, CountingEmbedder(), **kw)
    rng = np.random.default_rng(9)
    for i in range(30):
        memory.observe(*episode(_goal(rng), bool(i % 2), f"t{i}"))
    memory.freeze()
    memory.save(tmp_path)
    goals = ["v:1,0,0", "v:0,1,0.5", "v:-1,0.2,0.3"]
    expected = memory.retrieve_batch([bquery(g, f"q{n}") for n, g in enumerate(goals)])
    assert any(c.memory_ids for c in expected)

    embedder = CountingEmbedder()
    loaded = _baseline(cls, embedder, **kw)
    loaded.load(tmp_path)
    loaded.freeze()
    got = loaded.retrieve_batch([bquery(g, f"q{n}") for n, g in enumerate(goals)])
    assert got == expected
    assert embedder.calls == [goals]  # one call, the queries only

    other = CountingEmbedder(name="another-embedder")
    changed = _baseline(cls, other, **kw)
    changed.load(tmp_path)
    changed.freeze()
    with caplog.at_level(logging.WARNING, logger="memarena.memory.vectors"):
        got = changed.retrieve_batch([bquery(g, f"q{n}") for n, g in enumerate(goals)])
    assert "another-embedder" in caplog.text
    assert got == expected and len(other.texts) > len(goals)  # the stored texts, re-embedded


# -- LangMem: the InMemoryStore's vectors in the snapshot -----------------------------------------
def test_langmem_snapshot_puts_stored_vectors_back_without_embedding(tmp_path, caplog):
    need_module("langmem")
    from baseline_helpers import episode
    from baseline_helpers import query as bquery
    from doubles import FakeLLM

    from memarena.memory.langmem import LangMem

    def memory_with(embedder, llm=None):
        llm = llm or FakeLLM()
        services = MemoryServices(llm_factory=lambda: llm, embedder_factory=lambda: embedder)
        return LangMem(services=services, index_fields=["content.observation"])

    def insert(*observations):
        calls = [
            {
                "tool": "Episode",
                "args": {"observation": o, "thoughts": "t", "action": "a", "result": "r"},
            }
            for o in observations
        ]
        return json.dumps({"calls": calls})

    llm = FakeLLM([insert("v:1,0,0"), insert("v:0,1,0", "v:0,0.2,1")])
    memory = memory_with(CountingEmbedder(), llm)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    memory.save(tmp_path)
    blob = json.loads((tmp_path / "memory.json").read_text())
    assert blob["state"]["vectors"]["rows"] == 3
    assert blob["state"]["vectors"]["embedder"] == {"name": "fake-embedder", "dim": 3}
    goals = ["v:0.9,0.1,0", "v:0.2,0.8,0", "v:0,0,1"]
    expected = [memory.retrieve(bquery(g)) for g in goals]

    embedder = CountingEmbedder()
    loaded = memory_with(embedder)
    loaded.load(tmp_path)
    assert loaded.retrieve_batch([bquery(g) for g in goals]) == expected
    assert embedder.calls == [goals]  # the queries, in one call; no stored item embedded

    path = tmp_path / "memory.json"
    del blob["state"]["vectors"]  # an older snapshot
    path.write_text(json.dumps(blob))
    old = CountingEmbedder()
    again = memory_with(old)
    again.load(tmp_path)
    assert [again.retrieve(bquery(g)) for g in goals] == expected
    assert len(old.texts) == 3 + 3


def test_reme_admission_dedups_within_the_batch_and_embeds_each_key_once():
    embedder = CountingEmbedder()
    memory = ReMe(services=MemoryServices(embedder_factory=lambda: embedder), judge=False)
    memory.begin_phase("eval")
    first = Experience("", "v:1,0,0", "", task_query="v:0,0,1")
    first.id = memory.pool.new_id()
    memory.pool.add(first)
    memory.pool.matrix("usage_scenario")
    memory.pool.matrix("task_query")
    memory.pool.matrix("content")
    embedder.calls.clear()
    candidates = [  # content = "<scenario>\n" parses as the scenario's vector
        Experience("", "v:0,1,0", "", task_query="v:1,1,0"),
        Experience("", "v:0,1,0.01", "", task_query="v:1,1,1"),  # duplicate of the one above
        Experience("", "v:1,0,0.001", "", task_query="v:0,1,1"),  # duplicate of the stored one
        Experience("", "v:0,0,1", "", task_query="v:1,0,1"),
    ]
    added = memory._admit(candidates)
    assert [e.when_to_use for e in added] == ["v:0,1,0", "v:0,0,1"]
    assert memory.counts["duplicates"] == 2 and len(memory.pool) == 3
    # one call for the candidates' contents, then one per other built matrix
    assert sorted(len(c) for c in embedder.calls) == [2, 2, 4]
    for key in ("usage_scenario", "task_query", "content"):
        assert np.allclose(memory.pool.matrix(key), _rebuilt(memory, key))


def _rebuilt(memory: ReMe, key: str) -> np.ndarray:
    rows = FakeEmbedder().encode([e.key_text(key) for e in memory.pool.items.values()])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)
