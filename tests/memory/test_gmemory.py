"""G-Memory baseline: query graph (Eq. 1-4), insight graph and maintenance, method wiring."""

from __future__ import annotations

import json

import numpy as np
import pytest
from doubles import FakeEmbedder, FakeLLM

from conftest import run_py
from memarena.core import (
    Feedback,
    MemoryQuery,
    MemoryServices,
    Observation,
    Outcome,
    Step,
    Task,
    Trajectory,
)
from memarena.memory.gmemory import GMemory, maintenance, prompts
from memarena.memory.gmemory.insights import InsightGraph, parse_merge, parse_ops
from memarena.memory.gmemory.interaction import (
    build_interaction_graph,
    extract_key_steps,
    heuristic_key_steps,
)
from memarena.memory.gmemory.query_graph import QueryGraph, QueryNode


def step(action: str, progress: float = 0.0, changed: bool = False, valid: bool = True) -> Step:
    return Step(action, f"after {action}", 0.0, progress, Feedback(valid, changed))


def traj(task_id: str, goal: str, steps: list[Step] | None = None) -> Trajectory:
    task = Task(id=task_id, env="pddl", split="train", domain="d", goal=goal)
    steps = steps if steps is not None else [step("pick a", 0.5, True), step("put a", 1.0, True)]
    return Trajectory(task=task, initial_observation="start", steps=steps)


def outcome(success: bool) -> Outcome:
    return Outcome(success=success, progress=1.0 if success else 0.0, steps=2, status="success")


def query(task_id: str, goal: str) -> MemoryQuery:
    task = Task(id=task_id, env="pddl", split="test", domain="d", goal=goal)
    return MemoryQuery(task=task, observation=Observation(text="start", goal=goal))


def make(llm: FakeLLM | None = None, **kw) -> GMemory:
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=FakeEmbedder)
    return GMemory(services=services, env_name="pddl", **kw)


# -- interaction graphs and key steps -------------------------------------------------------------
def test_interaction_graph_is_a_chain_of_utterances():
    graph = build_interaction_graph(traj("t", "g"))
    # initial observation + (action, observation) per step = 1 + 2 * 2 nodes, 4 edges
    assert graph.number_of_nodes() == 5 and list(graph.edges) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert [graph.nodes[n]["speaker"] for n in graph] == ["env", "agent", "env", "agent", "env"]


def test_key_steps_one_batched_call_and_fallbacks():
    steps = [step("look"), step("pick", 0.5, True), step("bad", valid=False), step("put", 1.0)]
    trajs = [traj("a", "g", steps), traj("b", "g", steps), traj("c", "g", steps)]
    llm = FakeLLM(
        [
            json.dumps({"key_steps": [{"step": 4, "why": "done"}, {"step": 2, "why": "x"}]}),
            json.dumps({"key_steps": [{"step": 9, "why": "out of range"}]}),
            "not json",
        ]
    )
    usage: dict[str, int] = {}
    out = extract_key_steps(llm, trajs, max_key_steps=5, usage=usage)
    assert llm.batches == 1 and len(llm.requests) == 3
    # each request's schema bounds the step numbers by its trajectory's 4 steps
    assert all(r.json_schema == prompts.key_steps_schema(4, 5) for r in llm.requests)
    # 1-based 4, 2 -> 0-based sorted [1, 3]; the other two fall back to progress steps 1, 3
    assert out == [[1, 3], [1, 3], [1, 3]]
    assert llm.usage.fallbacks == {"gmemory_key_steps": 2}
    assert usage == {"calls": 1, "requests": 3, "prompt_tokens": 30, "completion_tokens": 9}


def test_heuristic_key_steps_progress_then_changes_capped_or_last_steps():
    steps = [step("a", 0.0, True), step("b", 0.5), step("c"), step("d", 0.5, True)]
    # progress rose at index 1; index 0 and 3 changed the state -> [1, 0, 3] capped at 2 -> [0, 1]
    assert heuristic_key_steps(traj("t", "g", steps), 2) == [0, 1]
    nothing = [step("x"), step("y"), step("z")]
    assert heuristic_key_steps(traj("t", "g", nothing), 2) == [1, 2]


# -- query graph ----------------------------------------------------------------------------------
def node(qid: str, status: str = "Resolved") -> QueryNode:
    return QueryNode(id=qid, goal=qid, status=status)


def test_query_graph_links_by_threshold_and_k():
    graph = QueryGraph(link_k=2, link_threshold=0.7)
    graph.add(node("a"), np.array([1.0, 0.0]))
    graph.add(node("b"), np.array([0.9, 0.1]))  # cos(a, b) = 0.994 -> linked
    graph.add(node("c"), np.array([0.0, 1.0]))  # cos(c, a) = 0, cos(c, b) = 0.11 -> none
    assert sorted(graph.graph.edges("b")) == [("b", "a")] and list(graph.graph.edges("c")) == []
    # d is similar to a and b (>= 0.7) but link_k = 2 keeps the two best: b (0.99), a (0.95)
    graph.add(node("e"), np.array([0.8, 0.2]))
    linked = graph.add(node("d"), np.array([0.95, 0.3]))
    assert linked == ["e", "b"] and "a" not in graph.graph["d"]
    assert graph.add(node("d"), np.array([1.0, 0.0])) == [] and len(graph) == 4 + 0 + 0 + 1


def test_query_graph_top_k_and_one_hop_expansion_deterministic_ties():
    graph = QueryGraph(link_k=10, link_threshold=0.99)
    graph.add(node("a"), np.array([1.0, 0.0, 0.0]))
    graph.add(node("b"), np.array([1.0, 0.0, 0.0]))  # tie with a; linked to a (cos 1)
    graph.add(node("c"), np.array([0.0, 1.0, 0.0]))
    graph.add(node("d"), np.array([0.0, 1.0, 0.0]))  # linked to c
    graph.add(node("e"), np.array([0.0, 0.0, 1.0]))
    top, expanded = graph.retrieve(np.array([0.0, 1.0, 0.0]), k=1, hops=1)
    assert top == ["c"] and expanded == ["c", "d"]  # tie c/d -> insertion order; d via 1 hop
    top, expanded = graph.retrieve(np.array([1.0, 0.1, 0.0]), k=1, hops=0)
    assert top == ["a"] and expanded == ["a"]
    top, expanded = graph.retrieve(np.array([1.0, 0.1, 0.0]), k=3, hops=1)
    assert top == ["a", "b", "c"] and expanded == ["a", "b", "c", "d"]


def test_query_graph_round_trip_and_chunked_matrix():
    graph = QueryGraph()
    rng = np.random.default_rng(0)
    for i in range(1030):  # crosses one chunk of 1024 rows
        graph.add(node(f"q{i}"), rng.normal(size=8))
    blob = json.loads(json.dumps(graph.to_dict()))
    again = QueryGraph()
    again.load_dict(blob)
    assert again.ids == graph.ids and np.array_equal(again.embeddings, graph.embeddings)
    assert sorted(map(sorted, again.graph.edges())) == sorted(map(sorted, graph.graph.edges()))
    probe = rng.normal(size=8)
    assert again.retrieve(probe, 5) == graph.retrieve(probe, 5)


# -- insight graph ---------------------------------------------------------------------------
def test_rank_insights_by_count_then_first_met():
    graph = InsightGraph()
    i1 = graph.add("one", {"a"})  # met 1st (task a), count 1
    i2 = graph.add("two", {"a", "b"})  # met 2nd (task a), count 2
    i3 = graph.add("three", {"b"}, score=5)  # met 3rd (task b), count 1: its score plays no part
    graph.add("four", {"z"})  # no support
    i5 = graph.add("five", {"c"})  # met 4th (task c), count 1
    ranked = graph.rank_insights(["a", "b", "c"], top_b=10)
    assert [i.id for i in ranked] == [i2.id, i1.id, i3.id, i5.id]
    assert [i.id for i in graph.rank_insights(["a", "b", "c"], top_b=2)] == [i2.id, i1.id]


def test_apply_ops_scores_and_clear_removes_at_zero():
    graph = InsightGraph()
    counts = graph.apply([{"op": "ADD", "content": "check preconditions"}], ["q1"])
    (ins,) = graph.insights.values()
    assert counts["ADD"] == 1 and ins.score == 2 and ins.supports == {"q1"}  # ADD sets 2
    graph.apply([{"op": "AGREE", "id": ins.id}], ["q2"])  # 2 + 1 = 3
    graph.apply([{"op": "EDIT", "id": ins.id, "content": "new"}], ["q3"])  # 3 + 1 = 4
    assert ins.score == 4 and ins.content == "new" and ins.supports == {"q1", "q2", "q3"}
    graph.apply([{"op": "REMOVE", "id": ins.id}] * 4, ["q4"])  # 4 - 4 = 0: not removed yet
    assert ins.score == 0 and ins.supports == {"q1", "q2", "q3"} and graph.clear() == 1
    assert len(graph) == 0 and graph.apply([{"op": "AGREE", "id": ins.id}], [])["AGREE"] == 0


def test_parse_ops_and_merge_count_malformed_answers():
    graph = InsightGraph()
    ins = graph.add("keep", {"q0"})
    answer = {
        "operations": [
            {"op": "ADD", "content": "new lesson"},
            {"op": "AGREE", "id": ins.id},
            {"op": "REMOVE", "id": "ins-99"},  # not shown: dropped, counted
            {"op": "EDIT", "id": ins.id},  # no content: dropped, counted
        ]
    }
    llm = FakeLLM()
    fallbacks: dict[str, int] = {}
    valid = parse_ops(llm, answer, {ins.id}, fallbacks)
    assert valid == [{"op": "ADD", "content": "new lesson"}, {"op": "AGREE", "id": ins.id}]
    assert fallbacks == {"gmemory_insights": 2} == llm.usage.fallbacks
    assert parse_ops(llm, None, {ins.id}, fallbacks) == []  # unparseable: json_batch counted it
    assert parse_ops(llm, {"operations": "oops"}, {ins.id}, fallbacks) == []
    assert parse_merge(llm, {"insights": ["a", " "]}, ["x", "y"], 1, fallbacks) == ["x", "y"]
    assert parse_merge(llm, {"insights": ["a", "b"]}, ["x", "y", "z"], 1, fallbacks) == ["a"]
    assert fallbacks == {"gmemory_insights": 4}


# -- the method ------------------------------------------------------------------------------
def ops_answer(*ops) -> str:
    return json.dumps({"operations": list(ops)})


KEY = json.dumps({"key_steps": [{"step": 2, "why": "goal reached"}]})


def test_schedule_finetune_every_5_and_merge_every_20():
    llm = FakeLLM(default=KEY)
    memory = make(llm)
    calls = []
    memory.run_finetune = lambda: calls.append(("finetune", memory.n_observed))
    memory.run_merge = lambda: calls.append(("merge", memory.n_observed))
    for i in range(40):
        memory.observe(traj(f"t{i}", f"goal {i}"), outcome(i % 2 == 0))
    assert [c for c in calls if c[0] == "finetune"] == [("finetune", n) for n in range(5, 41, 5)]
    assert [c for c in calls if c[0] == "merge"] == [("merge", 20), ("merge", 40)]


def test_observe_retrieve_slots_tokens_and_round_trip():
    llm = FakeLLM(default=ops_answer({"op": "ADD", "content": "pick before put"}))
    memory = make(llm, k=2, n_successes=1, top_b=5)
    goals = ["v:1,0,0", "v:0.9,0.1,0", "v:0,1,0", "v:0.1,0.9,0", "v:0,0,1"]
    for i, goal in enumerate(goals):
        llm.answers.append(KEY)  # key steps of task i
        if i == 0:
            llm.answers.append(json.dumps({"reason": "put a in the wrong place"}))
        # the 5th observation fine-tunes on 5 drawn tasks: one batch each, the default answers
        memory.observe(traj(f"t{i}", goal), outcome(success=i != 0))
    assert len(memory.queries) == 5 and memory.queries.graph.number_of_edges() == 2
    assert memory.queries.nodes["t1"].key_steps == [1]
    assert memory.queries.nodes["t0"].fail_reason == "put a in the wrong place"
    (ins,) = memory.insights.insights.values()  # later ADDs of the same rule are duplicates
    assert ins.content == "pick before put" and ins.score == 2
    usage = memory.token_usage
    assert usage["key_steps"] == {
        "calls": 5,
        "requests": 5,
        "prompt_tokens": 50,
        "completion_tokens": 15,
    }
    assert usage["fail_reason"]["calls"] == 1 and usage["insights"]["calls"] == 5
    assert usage["merge"]["calls"] == 0 and usage["relevance"]["calls"] == 0

    scores = [json.dumps({"score": 8}), json.dumps({"score": 2})]
    llm.answers += scores
    ctx = memory.retrieve(query("new", "v:1,0.05,0"))
    # graph: t0 (Failed), t1 -> one solved hit < pool of 2 -> nearest solved t1, t3; LLM: t1
    assert list(ctx.slots) == ["past_successes", "insights"]
    assert "Task: v:0.9,0.1,0 (Resolved)" in ctx.slots["past_successes"]
    assert "step 2: > put a" in ctx.slots["past_successes"]
    assert ctx.slots["insights"].splitlines()[1:] == ["1. pick before put"]
    assert ctx.memory_ids == ["t1", ins.id] and memory.shown["new"] == [ins.id]
    assert usage["relevance"]["calls"] == 1 and len(llm.requests[-1].messages) == 2

    state = json.loads(json.dumps(memory.state_dict()))
    again = make(FakeLLM(list(scores)), k=2, n_successes=1, top_b=5)
    again.load_state_dict(state)
    assert again.state_dict() == memory.state_dict()
    assert again.retrieve(query("new", "v:1,0.05,0")) == ctx
    metrics = memory.metrics()
    assert metrics["memory_queries"] == 5 and metrics["memory_insights"] == 1
    assert memory.token_usage["insights"]["calls"] == 5


def test_after_task_receives_shown_insights_and_scores_them():
    llm = FakeLLM(default=KEY)
    memory = make(llm, rerank_successes=False)
    seen = []
    original = memory.after_task

    def spy(query_id, trajectory, outcome_, retrieved_insight_ids):
        seen.append((query_id, list(retrieved_insight_ids)))
        original(query_id, trajectory, outcome_, retrieved_insight_ids)

    memory.after_task = spy
    memory.observe(traj("t0", "v:1,0"), outcome(True))
    lesson = memory.insights.add("lesson", {"t0"})
    memory.retrieve(query("t1", "v:1,0.1"))
    memory.observe(traj("t1", "v:1,0.1"), outcome(True))
    assert seen == [("t0", []), ("t1", [lesson.id])] and "t1" not in memory.shown
    assert lesson.score == 3  # shown on a solved task: +1


def test_malformed_insight_output_counted_and_nothing_changes():
    llm = FakeLLM(default="garbage")
    memory = make(llm, start_insights_threshold=1, rounds_per_insights=1, insights_point_num=1)
    memory.observe(traj("t0", "v:1,0"), outcome(True))
    assert len(memory.insights) == 0
    # key steps fell back (1); the drawn task's success chunk fell back (1); no merge call
    assert memory.fallbacks == {"gmemory_insights": 1, "gmemory_key_steps": 1}
    assert llm.usage.fallbacks == memory.fallbacks


def test_empty_memory_retrieves_empty_context():
    memory = make(FakeLLM())
    assert memory.retrieve(query("x", "v:1,0")).slots == {}


def test_use_llm_false_is_offline_rule_mode():
    memory = make(
        None,
        use_llm=False,
        start_insights_threshold=2,
        rounds_per_insights=2,
        insights_point_num=20,
    )
    fail = [step("pick a", 0.5, True), step("stack b", 0.5, False, valid=False)]
    memory.observe(traj("t0", "v:1,0", fail), outcome(False))
    memory.observe(traj("t1", "v:0,1"), outcome(True))  # fine-tunes: rules for drawn t0 only
    (ins,) = memory.insights.insights.values()
    assert ins.content == "Avoid 'stack b' when the task is: v:1,0" and ins.supports == {"t0"}
    drawn = maintenance.sample_points(memory.queries.ids, 20, memory.rng())
    assert ins.score == 2 + drawn.count("t0") - 1  # ADD, then an AGREE per later draw
    assert (
        memory.queries.nodes["t0"].invalid == [1] and memory.queries.nodes["t0"].fail_reason == ""
    )
    assert memory.token_usage["key_steps"]["calls"] == 0


def test_retrieval_over_many_queries_is_the_cosine_top_k():
    """Every stored query is ranked (5000 rows: several matrix chunks). Its speed is measured
    by benchmarks/gmemory_retrieval.py, not here."""
    graph = QueryGraph(link_threshold=1.1)  # no links: fast build, nothing to expand
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(5000, 16))
    for i, vector in enumerate(vectors):
        graph.add(node(f"q{i}"), vector)
    probe = rng.normal(size=16)
    top, expanded = graph.retrieve(probe, k=3)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ (probe / np.linalg.norm(probe))  # best three: 0.80, 0.74, 0.73 (no ties)
    assert top == [f"q{i}" for i in np.argsort(-cosine)[:3]] == ["q317", "q4581", "q291"]
    assert expanded == top


# -- end to end ----------------------------------------------------------------------------------
def test_gmemory_end_to_end_with_embedded_model(tmp_path):
    proc = run_py(
        [
            "method=gmemory",
            "env=pddl",
            "backbone=scripted",
            "memory_backbone=smollm2_135m",
            "protocol.max_train_tasks=3",
            "protocol.max_eval_tasks=2",
            "protocol.step_budget=4",
            "logger=none",
            f"paths.results_dir={tmp_path}",
            f"paths.cache_dir={tmp_path}/cache",  # ${paths.cache_dir} resolves in memory_backbone
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(next(tmp_path.rglob("metrics.json")).read_text())
    assert metrics["method"] == "gmemory" and metrics["memory_queries"] == 3
    usage = metrics["memory_token_usage"]  # the purposes that made calls
    # the 3 train tasks all fail in the 4-step budget: key steps and a cause of failure for each;
    # no fine-tuning before 5 tasks, no merge, and no solved task for the re-ranking to score
    calls = {purpose: u["calls"] for purpose, u in usage.items()}
    assert calls == {"key_steps": 3, "fail_reason": 3}
    assert all(u["requests"] == 3 and u["prompt_tokens"] > 0 for u in usage.values())
    assert metrics["retrieval_calls"] == 2  # once per evaluated task (granularity "task")
    records = [json.loads(x) for x in next(tmp_path.rglob("episodes.jsonl")).open()]
    assert [r["memory_cost"]["calls"] for r in records] == [1, 1]


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
