"""G-Memory at parity with its reference code (bingreeky/GMemory, GMemory.py and tasks/run.py):
per-task insight scoring, fine-tuning on sampled tasks, the cluster merge, re-ranked retrieval of
full solved trajectories, the insight neighbourhood, the cause of failure, and the defaults."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from doubles import FakeEmbedder, FakeLLM

from conftest import compose_cfg
from memarena.core import (
    ConfigError,
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
from memarena.memory.gmemory.cluster import finch_labels
from memarena.memory.gmemory.insights import InsightGraph
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryNode


def step(action: str, valid: bool = True) -> Step:
    return Step(action, f"after {action}", 0.0, 0.5, Feedback(valid, valid))


def traj(task_id: str, goal: str, steps: list[Step] | None = None) -> Trajectory:
    task = Task(id=task_id, env="pddl", split="train", domain="d", goal=goal)
    steps = steps if steps is not None else [step("pick a"), step("put a")]
    return Trajectory(task=task, initial_observation="start", steps=steps)


def outcome(success: bool) -> Outcome:
    return Outcome(success=success, progress=1.0 if success else 0.0, steps=2, status="success")


def query(task_id: str, goal: str) -> MemoryQuery:
    task = Task(id=task_id, env="pddl", split="test", domain="d", goal=goal)
    return MemoryQuery(task=task, observation=Observation(text="start", goal=goal))


def make(llm: FakeLLM | None, **kw) -> GMemory:
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=FakeEmbedder)
    return GMemory(services=services, env_name="pddl", **kw)


def store(memory: GMemory, task_id: str, goal: str, success: bool, **node) -> None:
    """A stored task without any LLM call (the node fields given directly)."""
    steps = node.pop("steps", [("pick a", "ok"), ("put a", "done")])
    status = RESOLVED if success else FAILED
    memory.queries.add(QueryNode(task_id, goal, status, steps=steps, **node), memory._embed(goal))
    memory.n_observed += 1


KEY = json.dumps({"key_steps": [{"step": 2, "why": "goal reached"}]})


def ops(*operations) -> str:
    return json.dumps({"operations": list(operations)})


# -- 1. per-task insight scoring (GMemory.backward / InsightsManager.clear_insights) -------------
def test_shown_insights_scored_after_every_task_and_removed_at_zero():
    llm = FakeLLM(default=KEY)
    memory = make(llm)  # 3 tasks: no fine-tuning, no merge
    store(memory, "t0", "v:1,0,0", True)
    kept = memory.insights.add("check the gripper first", {"t0"})  # ADD score 2
    doomed = memory.insights.add("move before picking", {"t0"})
    doomed.score = 1
    memory.retrieve(query("a", "v:1,0.1,0"))
    assert memory.shown["a"] == [kept.id, doomed.id]
    memory.observe(traj("a", "v:1,0.1,0"), outcome(True))  # +1 each
    assert (kept.score, doomed.score) == (3, 2)
    memory.retrieve(query("b", "v:1,0.2,0"))
    llm.answers += [KEY, json.dumps({"reason": "wrong room"})]
    memory.observe(traj("b", "v:1,0.2,0"), outcome(False))  # -2 each: doomed at 0 is removed
    assert kept.score == 1 and list(memory.insights.insights) == [kept.id]


# -- 2. fine-tuning on sampled tasks -------------------------------------------------------------
def test_finetune_schedule_follows_start_threshold_and_rounds():
    memory = make(FakeLLM(default=KEY), start_insights_threshold=7, rounds_per_insights=5)
    calls = []
    memory.run_finetune = lambda: calls.append(memory.n_observed)
    memory.run_merge = lambda: 0
    for i in range(21):
        memory.observe(traj(f"t{i}", f"goal {i}"), outcome(True))
    assert calls == [10, 15, 20]  # not at 5: fewer than 7 tasks stored


def test_finetune_point_batches_compare_and_success_calls_from_similar_tasks():
    llm = FakeLLM()
    memory = make(llm)
    store(memory, "s1", "v:1,0,0", True, key_steps=[1], invalid=[0])
    store(memory, "s2", "v:0.9,0.3,0", True, key_steps=[0])
    store(memory, "f1", "v:0.95,0.1,0", False, fail_reason="dropped the ball in the hall")
    store(memory, "far", "v:0,0,1", True)
    shown = memory.insights.add("look before you move", {"s1", "f1"})  # 1 + 2 (f1 twice) of 5
    hidden = memory.insights.add("unrelated", {"far"})
    llm.answers += [
        ops({"op": "ADD", "content": "Compare the goal state, because it ends the task."}),
        ops({"op": "AGREE", "id": shown.id}, {"op": "REMOVE", "id": hidden.id}),  # not shown
        ops({"op": "EDIT", "id": shown.id, "content": "Look first, because it is cheap."}),
    ]
    counts = maintenance.finetune_point(
        llm, memory.queries, memory.insights, "f1", random.Random(0), usage={}, fallbacks={}
    )
    # f1 failed: 3 nearest solved (s1, s2, far) and [f1, f1]: 2 pairs + 1 success chunk
    assert llm.batches == 1 and len(llm.requests) == 3
    assert all(r.json_schema == prompts.OPS_SCHEMA for r in llm.requests)
    (sys1, user1), (_, user2), (sys3, user3) = [
        (r.messages[0]["content"], r.messages[1]["content"]) for r in llm.requests
    ]
    assert sys1 == prompts.COMPARE_SYSTEM and sys3 == prompts.SUCCESS_SYSTEM
    assert "Task: v:1,0,0 (Resolved)" in user1 and "Full trajectory:" in user1
    assert "step 1: > pick a" not in user1.split("Failed task:")[0]  # rejected step left out
    assert "dropped the ball in the hall" in user1 and "Task: v:0.95,0.1,0 (Failed)" in user1
    assert f"[{shown.id}] look before you move" in user1 and hidden.id not in user1
    assert "Task: v:0.9,0.3,0 (Resolved)" in user2
    assert "Key steps" not in user3 and "step 2: > put a" in user3  # chunk: key steps only
    assert counts["ADD"] == 1 and counts["AGREE"] == 1 and counts["EDIT"] == 1
    added = memory.insights.insights["ins-3"]
    assert added.supports == {"s1", "f1"} and added.score == 2  # the pair's tasks
    assert shown.score == 4 and shown.content == "Look first, because it is cheap."
    assert hidden.score == 2  # REMOVE of a rule that was not shown: dropped


def test_run_finetune_draws_are_seeded_by_the_memory_state():
    def draws(seed: int, n_observed: int) -> list[str]:
        memory = make(FakeLLM(), insights_point_num=5, seed=seed, use_llm=False)
        for i in range(8):
            store(memory, f"t{i}", f"v:{i},1,0", i % 2 == 0, steps=[("act", "x")])
        memory.n_observed = n_observed
        seen: list[str] = []
        memory.rule_ops = lambda q: seen.append(q) or []
        memory.run_finetune()
        return seen

    # 5 draws with replacement (the reference's random.choices) from a seed of (seed, n_observed)
    first = draws(0, 10)
    assert first == ["t1", "t2", "t6", "t4", "t3"]
    assert draws(0, 10) == first  # same state, same draws
    assert draws(0, 15) == ["t3", "t5", "t2", "t1", "t1"]  # a later round draws anew
    assert draws(1, 10) == ["t1", "t2", "t4", "t7", "t7"]  # so does another seed


def test_update_rules_remove_strength_duplicates_and_edit_to_agree():
    graph = InsightGraph()
    a = graph.add("check the lid", {"q0"})
    graph.apply([{"op": "REMOVE", "id": a.id}], ["q1"])
    assert a.score == 1  # fewer than 10 insights: -1
    for i in range(9):
        graph.add(f"rule {i}", {"q0"})
    counts = graph.apply(
        [
            {"op": "ADD", "content": "Always check the lid, twice."},  # contains "check the lid"
            {"op": "EDIT", "id": "ins-2", "content": "Before all, rule 5 holds."},  # -> AGREE
            {"op": "REMOVE", "id": "ins-3"},
        ],
        ["q9"],
    )
    assert counts["duplicate"] == 1 and counts["ADD"] == 0 and counts["AGREE"] == 1
    assert graph.insights["ins-7"].score == 3 and "q9" in graph.insights["ins-7"].supports
    assert graph.insights["ins-2"].content == "rule 0"  # not edited
    assert graph.insights["ins-3"].score == -1  # 10 insights: -3; removed only by clear()
    assert a.id in graph.insights and graph.clear() == 1 and "ins-3" not in graph.insights


def test_remove_then_agree_within_one_sampled_task_survives():
    llm = FakeLLM()
    memory = make(llm, insights_point_num=1)
    store(memory, "s1", "v:1,0,0", True)
    store(memory, "f1", "v:1,0.1,0", False)
    fragile = memory.insights.add("keep it", {"s1", "f1"})
    fragile.score = 1
    # whichever task is drawn: one (solved, failed) pair call, then one success-chunk call
    llm.answers = [ops({"op": "REMOVE", "id": fragile.id}), ops({"op": "AGREE", "id": fragile.id})]
    counts = memory.run_finetune()
    assert len(llm.requests) == 2 and counts["REMOVE"] == counts["AGREE"] == 1
    # 1 - 1 + 1 = 1 > 0: insights are cleared only after the sampled task's operations
    assert fragile.id in memory.insights.insights and fragile.score == 1


# -- merge per task cluster ----------------------------------------------------------------------
def angle(deg: float) -> str:
    r = np.deg2rad(deg)
    return f"v:{np.cos(r):.6f},{np.sin(r):.6f},0"


def test_finch_picks_the_second_level_and_single_cluster_when_none_qualifies():
    degrees = [0, 1, 10, 11, 120, 121, 130, 131, 240, 241, 250, 251]
    points = np.array([[np.cos(np.deg2rad(d)), np.sin(np.deg2rad(d))] for d in degrees])
    labels = finch_labels(points)
    assert list(labels) == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert list(finch_labels(points[:2])) == [0, 0]  # one level only: one cluster


def test_merge_replaces_insights_by_cluster_in_one_batch():
    llm = FakeLLM()
    memory = make(llm)
    degrees = [0, 1, 10, 11, 120, 121, 130, 131, 240, 241, 250, 251]
    for d in degrees:
        store(memory, f"q{d}", angle(d), True)
    memory.insights.add("pick first", {"q0"})
    memory.insights.add("pick early", {"q11"})
    memory.insights.add("move twice", {"q120"})
    llm.answers = [json.dumps({"insights": ["Pick first."]}), "not json"]
    removed = memory.run_merge()
    assert llm.batches == 1 and len(llm.requests) == 2  # cluster C has no insights: no call
    assert llm.requests[0].json_schema == prompts.merge_schema(1)
    merged = list(memory.insights.insights.values())
    assert [i.content for i in merged] == ["Pick first.", "move twice"]  # malformed: kept
    assert merged[0].supports == {"q0", "q1", "q10", "q11"} and merged[0].score == 2
    assert merged[1].supports == {"q120", "q121", "q130", "q131"}
    assert removed == 1 and memory.fallbacks == {"gmemory_insights": 1}


# -- 3. retrieval: re-ranked solved tasks with their full trajectory ---------------------------
def test_retrieval_reranks_and_shows_full_trajectory_with_key_steps():
    llm = FakeLLM()
    memory = make(llm, k=1, hops=0, n_successes=1)
    store(memory, "s1", "v:1,0,0", True, key_steps=[1])
    steps = [("look", "a room"), ("bad", "Nothing happens."), ("put b", "done")]
    store(memory, "s2", "v:0.9,0.3,0", True, steps=steps, key_steps=[2], invalid=[1])
    store(memory, "f1", "v:1,0.05,0", False)
    llm.answers = [json.dumps({"score": 3}), json.dumps({"score": 9})]
    ctx = memory.retrieve(query("new", "v:1,0.1,0"))
    # pool of 2 solved candidates by cosine (s1, s2), the LLM prefers s2
    assert [r.json_schema for r in llm.requests] == [prompts.RELEVANCE_SCHEMA] * 2
    assert "Task: v:1,0,0 (Resolved)" in llm.requests[0].messages[1]["content"]
    assert ctx.memory_ids == ["s2"]  # n_successes=1, no insights stored
    shown = ctx.slots["past_successes"]
    assert "Key steps:\n  step 3: > put b -> done" in shown
    assert "Full trajectory:\n  step 1: > look -> a room\n  step 3: > put b -> done" in shown
    assert memory.token_usage["relevance"] == {
        "calls": 1,
        "requests": 2,
        "prompt_tokens": 20,
        "completion_tokens": 6,
    }
    llm.answers = ['{"score": "high"}', json.dumps({"score": 2})]
    again = memory.retrieve(query("other", "v:1,0.1,0"))
    # s1's malformed score counts as a fallback (scored 0): s2 (score 2) still wins
    assert again.memory_ids == ["s2"] and memory.fallbacks == {"gmemory_relevance": 1}


def test_similarity_threshold_drops_distant_solved_tasks():
    memory = make(FakeLLM(), rerank_successes=False, retrieve_threshold=0.5, n_successes=2)
    store(memory, "near", "v:1,0,0", True)
    store(memory, "far", "v:0,1,0", True)
    assert memory.retrieve(query("x", "v:1,0.1,0")).memory_ids == ["near"]


def test_insights_ranked_by_nearest_solved_and_failed_tasks_not_the_graph():
    memory = make(FakeLLM(), k=1, hops=0, top_b=3)
    store(memory, "s1", "v:1,0,0", True)
    store(memory, "s2", "v:0.8,0.6,0", True)
    store(memory, "s3", "v:0.6,0.8,0", True)
    store(memory, "f1", "v:0.5,0.5,0.7", False)
    ins = memory.insights.add("from the third solved task", {"s3"})
    also = memory.insights.add("from the failed task", {"f1"})
    ctx = memory.retrieve(query("x", "v:1,0.05,0"))  # graph: top-1 = s1 only
    assert ctx.memory_ids[1:] == [ins.id, also.id]


# -- insight ranking and identity (query_insights_with_score, GMemory.backward) ----------------
def test_rank_ties_keep_first_met_order_not_score_or_id():
    graph = InsightGraph()
    i1 = graph.add("one", {"s_far"})
    i2 = graph.add("two", {"s_near"})
    i3 = graph.add("three", {"f1"}, score=5)
    i4 = graph.add("four", {"s_near", "f1"})
    # the reference visits s_near (i2, i4 in creation order), then s_far (i1), then f1 (i3):
    # counts i2 1, i4 2, i1 1, i3 1; a stable sort by count gives i4, i2, i1, i3
    ranked = graph.rank_insights(["s_near", "s_far", "f1"], top_b=4)
    assert [i.id for i in ranked] == [i4.id, i2.id, i1.id, i3.id]
    assert graph.rank_insights(["s_near", "s_far", "f1"], top_b=3) == ranked[:3]
    # (the earlier rule, count then score then id, showed i4, i3, i1)


def test_retrieval_shows_tied_insights_in_nearest_task_order():
    memory = make(FakeLLM(), rerank_successes=False, top_b=3)
    store(memory, "s1", "v:1,0,0", True)
    store(memory, "s2", "v:0.6,0.8,0", True)
    store(memory, "f1", "v:0.8,0.6,0", False)
    far = memory.insights.add("from the farther solved task", {"s2"}, score=9)
    failed = memory.insights.add("from the failed task", {"f1"})
    near = memory.insights.add("from the nearest solved task", {"s1"})
    ctx = memory.retrieve(query("x", "v:1,0.05,0"))
    # each count 1: solved tasks nearest first (s1, s2), then the failed one (f1)
    assert ctx.memory_ids == ["s1", near.id, far.id, failed.id]


def test_rank_by_text_counts_one_wording_once():
    graph = InsightGraph()
    x1 = graph.add("same", {"a"})
    x2 = graph.add("other", {"a", "b"})
    x3 = graph.add("same", {"b"})  # e.g. two clusters merged to one wording
    # text: a meets "same" (x1), "other"; b meets "other", "same" (x3): both at 2, first met first
    assert [i.id for i in graph.rank_insights(["a", "b"], 3, by_text=True)] == [x1.id, x2.id]
    # id: x1 1, x2 2, x3 1
    assert [i.id for i in graph.rank_insights(["a", "b"], 3)] == [x2.id, x1.id, x3.id]


def test_reward_texts_scores_every_insight_holding_a_shown_wording():
    graph = InsightGraph()
    exact = graph.add("pick first", set())  # 2 - 2 = 0: removed
    longer = graph.add("always pick first, then move", set(), score=3)  # 3 - 2 = 1
    other = graph.add("move", set())  # no shown wording in it: 2
    assert graph.reward_texts(["pick first"], success=False) == 1
    assert list(graph.insights) == [longer.id, other.id] and exact.id not in graph.insights
    assert (longer.score, other.score) == (1, 2)


@pytest.mark.parametrize(
    ("identity", "success", "after"),
    [("text", False, None), ("id", False, 2), ("text", True, 3), ("id", True, 2)],
)
def test_merge_reusing_a_shown_wording_then_scoring(identity, success, after):
    llm = FakeLLM()
    memory = make(llm, rerank_successes=False, merge_every=3, insight_identity=identity)
    store(memory, "t0", "v:1,0,0", True)
    store(memory, "t1", "v:0.8,0.6,0", True)
    memory.insights.add("pick first", {"t0"})
    memory.insights.add("look around", {"t1"})
    memory.retrieve(query("x", "v:1,0.05,0"))
    shown = ["pick first", "look around"] if identity == "text" else []
    assert memory.shown_texts.get("x", []) == shown
    # the 3rd task: key steps (+ cause of failure), then the merge of the single cluster of 3
    # tasks: both rules in one batch, merged into the first one's wording (a new insight, score 2)
    llm.answers = [KEY] + ([] if success else [json.dumps({"reason": "wrong room"})])
    llm.answers.append(json.dumps({"insights": ["pick first"]}))
    memory.observe(traj("x", "v:1,0.05,0"), outcome(success))
    assert len(llm.requests) == (2 if success else 3) and "x" not in memory.shown_texts
    # text: "pick first" was shown, so the merged rule gets 2 - 2 = 0 (removed) or 2 + 1 = 3;
    # id: the shown ids were merged away, the merged rule keeps its 2
    scores = [i.score for i in memory.insights.insights.values()]
    assert scores == ([] if after is None else [after])


def test_insight_identity_text_survives_a_snapshot_and_is_checked():
    memory = make(FakeLLM(), rerank_successes=False)
    store(memory, "t0", "v:1,0,0", True)
    memory.insights.add("pick first", {"t0"})
    memory.retrieve(query("x", "v:1,0.05,0"))
    again = make(FakeLLM(default=KEY), rerank_successes=False)
    again.load_state_dict(json.loads(json.dumps(memory.state_dict())))
    assert again.shown_texts == {"x": ["pick first"]}
    again.insights.add("pick first", {"t0"})  # same wording, another id: scored too
    again.observe(traj("x", "v:1,0.05,0"), outcome(True))
    assert [i.score for i in again.insights.insights.values()] == [3, 3]
    with pytest.raises(ConfigError, match="insight_identity='wording'"):
        make(FakeLLM(), insight_identity="wording")


# -- the cause of failure -----------------------------------------------------------------------
def test_failed_task_stores_the_llm_cause_of_failure():
    llm = FakeLLM([KEY, json.dumps({"reason": "the ball was left in room b"})])
    memory = make(llm)
    memory.observe(
        traj("t0", "v:1,0,0", [step("pick a"), step("drop a", valid=False)]), outcome(False)
    )
    node = memory.queries.nodes["t0"]
    assert node.fail_reason == "the ball was left in room b" and node.invalid == [1]
    assert llm.requests[1].json_schema == prompts.FAIL_REASON_SCHEMA
    assert memory.token_usage["fail_reason"]["calls"] == 1


# -- 4. defaults from tasks/run.py and the earlier values as an ablation ------------------------
def test_reference_defaults_and_memarena_v1_ablation():
    method = compose_cfg(["method=gmemory"]).method
    got = {key: method[key] for key in ("k", "hops", "n_successes", "top_b", "link_k")}
    # top_b: the released logs' "Insights Topk: 5" (run.py's default is 3)
    assert got == {"k": 1, "hops": 1, "n_successes": 1, "top_b": 5, "link_k": 10}
    assert method.observation_chars is None  # shown observations whole, as format_task_context
    assert method.retrieve_threshold == 0.0 and method.link_threshold == 0.85
    assert method.rerank_successes is True and method.insight_identity == "text"
    counts = ("start_insights_threshold", "rounds_per_insights", "insights_point_num")
    assert [method[key] for key in counts] == [5, 5, 5] and method.merge_every == 20
    v1 = compose_cfg(["method=gmemory", "ablation=gmemory/memarena_v1"]).method
    assert (v1.k, v1.n_successes, v1.top_b, v1.link_threshold) == (3, 2, 5, 0.7)
    evo = compose_cfg(["method=evograph"]).method  # EvoGraph retrieves as the code it builds on
    assert (evo.k, evo.n_successes, evo.top_b, evo.rerank_successes) == (1, 1, 5, True)
