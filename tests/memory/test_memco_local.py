"""MemCo local memory: LocalMerge, record induction and episode-reduced evidence (B.2).

Three hand-built ALFWorld-like episodes for the goal "put some apple in fridge". States
(cue = the normalized observation): s0 "you are in the kitchen", s1 "on countertop 1 you see
apple 1", s2 "you pick up apple 1", s3 "nothing happens", s4 "you arrive at fridge 1", s5 "you put
apple 1 in fridge 1". Actions: GC "go to countertop 1", TK "take apple 1 from countertop 1", GF
"go to fridge 1", PT "put apple 1 in fridge 1". sc = state change without progress.

E1 (success): s0 GC sc -> s1 TK progress -> s2 PT fail:precondition, stall -> s3 GF sc -> s4
    PT progress, success -> s5
E2 (failure): s0 GC sc -> s1 TK fail:no_effect, stall -> s3 GF sc -> s4 PT fail:precondition,
    stall -> s3
E3 (success): s0 GC sc -> s1 TK progress -> s2 GF sc -> s4 PT progress, success -> s5
"""

from __future__ import annotations

import itertools
import json

import pytest

from memarena.core.types import Feedback as EnvFeedback
from memarena.core.types import Step, Task, Trajectory
from memarena.memory.memco.base import Feedback, Transition
from memarena.memory.memco.graph import LocalGraph, episodic_graph
from memarena.memory.memco.induction import (
    OccurrenceLog,
    build_transitions,
    induce,
    normalize,
    occurrence_log,
)
from memarena.memory.memco.records import RecordStore

GOAL = "Put some apple in fridge."
G = "put some apple in fridge"
S0, S1, S2 = "you are in the kitchen", "on countertop 1 you see apple 1", "you pick up apple 1"
S3, S4, S5 = "nothing happens", "you arrive at fridge 1", "you put apple 1 in fridge 1"
GC, TK = "go to countertop 1", "take apple 1 from countertop 1"
GF, PT = "go to fridge 1", "put apple 1 in fridge 1"
OBS = {
    S0: "You are in the kitchen.",
    S1: "On countertop 1 you see apple 1.",
    S2: "You pick up apple 1.",
    S3: "Nothing happens.",
    S4: "You arrive at fridge 1.",
    S5: "You put apple 1 in fridge 1.",
}


def step(action: str, state: str, progress: float, changed: bool = True, label=None) -> Step:
    fb = EnvFeedback(valid_action=True, state_changed=changed, failure_label=label)
    return Step(
        action=action.capitalize(),
        observation=OBS[state],
        reward=0.0,
        progress=progress,
        feedback=fb,
    )


def trajectory(steps: list[Step], tid: str) -> Trajectory:
    task = Task(id=tid, env="alfworld", split="train", domain="kitchen", goal=GOAL)
    return Trajectory(task=task, initial_observation=OBS[S0], steps=steps)


E1 = trajectory(
    [
        step(GC, S1, 0.0),
        step(TK, S2, 0.5),
        step(PT, S3, 0.5, changed=False, label="precondition"),
        step(GF, S4, 0.5),
        step(PT, S5, 1.0),
    ],
    "e1",
)
E2 = trajectory(
    [
        step(GC, S1, 0.0),
        step(TK, S3, 0.0, changed=False, label="no_effect"),
        step(GF, S4, 0.0),
        step(PT, S3, 0.0, changed=False, label="precondition"),
    ],
    "e2",
)
E3 = trajectory([step(GC, S1, 0.0), step(TK, S2, 0.5), step(GF, S4, 0.5), step(PT, S5, 1.0)], "e3")
EPISODES = {"e1": (E1, True), "e2": (E2, False), "e3": (E3, True)}


def transitions(name: str):
    traj, success = EPISODES[name]
    return build_transitions(traj, lambda obs: obs, success=success)


def induce_all(order, store=None) -> RecordStore:
    store = RecordStore() if store is None else store
    for name in order:
        induce(transitions(name), EPISODES[name][1], GOAL, store, episode=name, scope="a1")
    return store


def table(store: RecordStore) -> dict[tuple, tuple]:
    """(type, condition, actions, outcome) -> ((c+, c-, c0), (n+, n-, n0))."""
    return {
        (r.type, r.condition, r.actions, r.outcome): (
            (r.c_pos, r.c_neg, r.c_stall),
            r.promotion_counts(),
        )
        for r in store
    }


# --- transitions --------------------------------------------------------------------------


def test_normalize():
    assert normalize("  On countertop 1,\n you SEE apple 1. ") == "on countertop 1, you see apple 1"
    assert normalize("...") == ""


def test_build_transitions_feedback_and_progress_delta():
    trs = transitions("e1")
    assert [(tr.state, tr.action, tr.next_state) for tr in trs] == [
        (S0, GC, S1),
        (S1, TK, S2),
        (S2, PT, S3),
        (S3, GF, S4),
        (S4, PT, S5),
    ]
    # cumulative progress 0, .5, .5, .5, 1 -> deltas 0, .5, 0, 0, .5
    assert [tr.feedback.progress_delta for tr in trs] == [0.0, 0.5, 0.0, 0.0, 0.5]
    assert trs[2].feedback == Feedback(True, False, "precondition", 0.0)
    assert trs[2].feedback.stalled and not trs[3].feedback.stalled
    assert trs[-1].feedback.done and trs[-1].feedback.success  # last step of a success
    assert not any(tr.feedback.success for tr in transitions("e2"))
    assert trs[2].observation == "Nothing happens."


# --- episodic graph and LocalMerge ---------------------------------------------------------


def test_episodic_graph_backbone_with_feedback_on_edges():
    g = episodic_graph(transitions("e1"))
    # 6 state nodes x0..x5 and 5 action nodes; per step act, result and delta edges
    assert g.number_of_nodes() == 11 and g.number_of_edges() == 15
    assert g.nodes["x2"] == {"type": "state", "content": S2, "t": 2}
    assert g.nodes["a2"]["type"] == "action" and g.nodes["a2"]["content"] == PT
    fb = g.edges["a2", "x3", "result"]["feedback"]
    assert fb["label"] == "precondition" and fb["stalled"] and not fb["progressed"]
    assert g.has_edge("x2", "a2", key="act") and g.has_edge("x2", "x3", key=f"delta:{PT}")


def test_local_merge_matches_nodes_and_edges_and_accumulates():
    local = LocalGraph()
    assert local.add_episode(transitions("e1"), "e1")
    # 6 distinct states + 4 distinct actions; 5 act + 5 result + 5 delta edges
    assert local.sizes() == {"nodes": 10, "edges": 15, "episodes": 1}
    local.add_episode(transitions("e2"), "e2")
    # new edges: result TK->s3, delta s1-TK->s3, delta s4-PT->s3
    assert local.sizes() == {"nodes": 10, "edges": 18, "episodes": 2}
    local.add_episode(transitions("e3"), "e3")
    # new edges: act s2->GF, delta s2-GF->s4 (result GF->s4 already exists)
    assert local.sizes() == {"nodes": 10, "edges": 20, "episodes": 3}
    assert not local.add_episode(transitions("e3"), "e3")  # an episode id merges once
    assert local.sizes()["edges"] == 20

    nodes = local.graph.nodes
    # s3 once in E1, twice in E2 (x2 and x4); PT twice in E1, once in E2 and E3
    assert nodes[f"state:{S3}"]["visits"] == 3
    assert nodes[f"action:{PT}"]["visits"] == 4
    act = local.graph.edges[f"state:{S4}", f"action:{PT}", "act"]
    # (s4, PT): progress in E1 and E3 (both terminal successes), precondition failure in E2
    assert (act["count"], act["progressed"], act["stalled"], act["success"]) == (3, 2, 1, 2)
    assert act["labels"] == {"precondition": 1}
    assert act["payload"]["t"] == 4 and act["payload"]["progressed"]  # first payload (E1 t=4)
    assert "episodes" not in act and "episodes" not in nodes[f"state:{S4}"]
    assert local.episodes == {"e1", "e2", "e3"}


def make_local() -> LocalGraph:
    local = LocalGraph(similarity_threshold=0.5)
    for name in ("e1", "e2", "e3"):
        local.add_episode(transitions(name), name)
    return local


def test_anchors_exact_first_then_jaccard_bounded():
    local = make_local()
    assert [a["state"] for a in local.anchors("On countertop 1 you see apple 1.")] == [S1]
    # tokens {on, countertop, 2, you, see, apple, 1} vs s1 {on, countertop, 1, you, see, apple}:
    # 6 / 7; vs s2 {you, pick, up, apple, 1}: 3 / 9 < 0.5
    (anchor,) = local.anchors("on countertop 2 you see apple 1")
    assert anchor["state"] == S1 and anchor["similarity"] == pytest.approx(6 / 7)
    assert local.anchors("a desk and a lamp") == []
    loose = LocalGraph.from_dict({**local.to_dict(), "similarity_threshold": 0.1})
    # "you apple 1" = {you, apple, 1}: s2 3/5, s1 3/6 (3 visits), s5 3/6 (2 visits), s4 2/6,
    # s0 1/7; the s1/s5 tie goes to the more visited node
    assert [a["state"] for a in loose.anchors("you apple 1", k=2)] == [S2, S1]
    assert [a["state"] for a in loose.anchors("you apple 1", k=10)] == [S2, S1, S5, S4, S0]


def test_neighborhood_sorted_and_bounded():
    local = make_local()
    entries = local.neighborhood(S1, max_transitions=5)
    # from s1: TK -> s2 twice with progress (E1, E3); TK -> s3 once, stalled (E2)
    assert [(e["action"], e["next_state"], e["count"], e["progressed"]) for e in entries] == [
        (TK, S2, 2, 2),
        (TK, S3, 1, 0),
    ]
    assert entries[1]["stalled"] == 1 and entries[1]["labels"] == {"no_effect": 1}
    assert entries[0]["similarity"] == 1.0 and entries[0]["state"] == S1
    assert len(local.neighborhood(S1, max_transitions=1)) == 1
    # s4: PT -> s5 (2 of 2 progressed) before PT -> s3 (0 of 1)
    assert [e["next_state"] for e in local.neighborhood(S4)] == [S5, S3]


def test_local_graph_round_trip():
    local = make_local()
    blob = json.loads(json.dumps(local.to_dict()))
    back = LocalGraph.from_dict(blob)
    assert back.to_dict() == local.to_dict()
    assert back.sizes() == local.sizes()
    assert back.neighborhood(S4) == local.neighborhood(S4)


# --- record induction ----------------------------------------------------------------------

# Every record of E1 alone: ((c+, c-, c0), (n+, n-, n0)).
E1_RECORDS = {
    # actionable (state, action, outcome class): one + per step; a stall marks step t2
    ("actionable", S0, (GC,), "state_change"): ((1, 0, 0), (1, 0, 0)),
    ("actionable", S1, (TK,), "progress"): ((1, 0, 0), (1, 0, 0)),
    ("actionable", S2, (PT,), "fail:precondition"): ((1, 0, 1), (1, 0, 1)),
    ("actionable", S3, (GF,), "state_change"): ((1, 0, 0), (1, 0, 0)),
    ("actionable", S4, (PT,), "progress"): ((1, 0, 0), (1, 0, 0)),
    # failure (previous action, action): t2 PT after TK failed and stalled
    ("failure", TK, (PT,), "fail:precondition"): ((1, 0, 1), (1, 0, 1)),
    # precondition (last progressing action, action): t1 (start, TK) progressed
    ("precondition", "start", (TK,), "progress"): ((1, 0, 0), (1, 0, 0)),
    # (TK, PT): - at t2 (stalled), + at t4 -> c = (1, 1, 1); contradiction wins: n = (0, 1, 1)
    ("precondition", TK, (PT,), "progress"): ((1, 1, 1), (0, 1, 1)),
    # repair: PT failed at t2; t3 GF changed the state, t4 retried PT and progressed: the fix is
    # GF, the action that enabled the retry
    ("repair", PT, (GF,), "progress"): ((1, 0, 0), (1, 0, 0)),
    # workflow: progress actions TK, PT in a successful episode
    ("workflow", G, (TK, PT), "success"): ((1, 0, 0), (1, 0, 0)),
    # case: occurrence counter only, no ledger
    ("case", G, (GC, TK, PT, GF, PT), "success"): ((1, 0, 0), (0, 0, 0)),
}

# Every record of E1 + E2 + E3 (any order).
ALL_RECORDS = {
    ("actionable", S0, (GC,), "state_change"): ((3, 0, 0), (3, 0, 0)),
    # (s1, TK): progress in E1, E3; fail:no_effect (stalled) in E2 -> each sibling gets -
    ("actionable", S1, (TK,), "progress"): ((2, 1, 1), (2, 1, 1)),
    ("actionable", S1, (TK,), "fail:no_effect"): ((1, 2, 1), (1, 2, 1)),
    ("actionable", S2, (PT,), "fail:precondition"): ((1, 0, 1), (1, 0, 1)),
    ("actionable", S2, (GF,), "state_change"): ((1, 0, 0), (1, 0, 0)),
    ("actionable", S3, (GF,), "state_change"): ((2, 0, 0), (2, 0, 0)),
    # (s4, PT): progress in E1, E3; fail:precondition (stalled) in E2
    ("actionable", S4, (PT,), "progress"): ((2, 1, 1), (2, 1, 1)),
    ("actionable", S4, (PT,), "fail:precondition"): ((1, 2, 1), (1, 2, 1)),
    ("failure", TK, (PT,), "fail:precondition"): ((1, 0, 1), (1, 0, 1)),
    # (GC, TK) failed with a stall in E2 (+), progressed in E1 and E3 (-)
    ("failure", GC, (TK,), "fail:no_effect"): ((1, 2, 1), (1, 2, 1)),
    # (GF, PT) failed with a stall in E2 (+), progressed in E1 and E3 (-)
    ("failure", GF, (PT,), "fail:precondition"): ((1, 2, 1), (1, 2, 1)),
    # (start, TK): + E1, + E3, - E2 (stalled)
    ("precondition", "start", (TK,), "progress"): ((2, 1, 1), (2, 1, 1)),
    # (TK, PT): E1 {-, 0, +} -> -, E3 {+} -> +
    ("precondition", TK, (PT,), "progress"): ((2, 1, 1), (1, 1, 1)),
    ("repair", PT, (GF,), "progress"): ((1, 0, 0), (1, 0, 0)),
    ("workflow", G, (TK, PT), "success"): ((2, 0, 0), (2, 0, 0)),
    ("case", G, (GC, TK, PT, GF, PT), "success"): ((1, 0, 0), (0, 0, 0)),
    ("case", G, (GC, TK, GF, PT), "success"): ((1, 0, 0), (0, 0, 0)),
    # E2's first setback: TK (fail:no_effect), never repaired in E2
    ("reflection", G, (TK,), "fail:no_effect"): ((1, 0, 0), (0, 0, 0)),
}


def test_induce_single_episode_exact_records():
    store = induce_all(["e1"])
    assert table(store) == E1_RECORDS
    precondition = store.get("precondition", TK, (PT,), "progress")
    assert precondition.ledger == {"a1|e1": {"+", "-", "0"}}
    assert precondition.scope == "a1" and precondition.text


def test_induce_three_episodes_exact_records():
    assert table(induce_all(["e1", "e2", "e3"])) == ALL_RECORDS


@pytest.mark.parametrize("order", list(itertools.permutations(["e1", "e2", "e3"])))
def test_promotion_counts_invariant_to_episode_order(order):
    assert table(induce_all(order)) == ALL_RECORDS


def test_repeating_an_episode_changes_nothing():
    store = induce_all(["e2", "e1", "e3", "e2", "e1"])
    assert table(store) == ALL_RECORDS
    assert occurrence_log(store).episodes == {"a1|e1", "a1|e2", "a1|e3"}


def test_occurrence_log_round_trip_keeps_invariance():
    store = induce_all(["e2"])
    log = OccurrenceLog.from_dict(json.loads(json.dumps(occurrence_log(store).to_dict())))
    reloaded = RecordStore.from_list(json.loads(json.dumps(store.to_list())))
    reloaded.occurrences = log
    induce_all(["e3", "e1"], reloaded)
    assert table(reloaded) == ALL_RECORDS


def test_workflow_contradicted_by_failed_episode():
    def tr(t, action, delta):
        return Transition(t, f"s{t}", action, Feedback(True, True, None, delta), f"s{t + 1}")

    phases = [tr(0, "take mug 1", 0.3), tr(1, "heat mug 1 with microwave 1", 0.3)]
    store = RecordStore()
    induce(phases, False, "heat some mug", store, "f1", "a1")  # failure first: no record yet
    assert store.of_type("workflow") == []
    induce(phases, True, "heat some mug", store, "s1", "a1")
    (workflow,) = store.of_type("workflow")
    # + from the success, - from the failed episode with the same progress phases
    assert workflow.actions == ("take mug 1", "heat mug 1 with microwave 1")
    assert (workflow.c_pos, workflow.c_neg, workflow.promotion_counts()) == (1, 1, (1, 1, 0))


def test_stall_supports_anti_pattern_within_an_episode():
    def tr(t, state, action, changed, delta, label=None):
        return Transition(t, state, action, Feedback(True, changed, label, delta), "x")

    steps = [
        tr(0, S0, GC, True, 0.0),
        tr(1, S1, TK, False, 0.0, "no_effect"),  # (GC, TK) stalls: failure +, stall
        tr(2, S3, GC, True, 0.0),
        tr(3, S1, TK, True, 0.5),  # (GC, TK) progresses: failure -
    ]
    store = RecordStore()
    induce(steps, False, GOAL, store, "e", "a1")
    failure = store.get("failure", GC, (TK,), "fail:no_effect")
    # ledger {+, -, 0}: a stall supports the anti-pattern -> n = (1, 0, 1)
    assert (failure.c_pos, failure.c_neg, failure.c_stall) == (1, 1, 1)
    assert failure.promotion_counts() == (1, 0, 1)
    # the ordinary actionable sibling with the same ledger: contradiction wins -> (0, 1, 1)
    progress = store.get("actionable", S1, (TK,), "progress")
    assert progress.ledger == {"a1|e": {"+", "-", "0"}}
    assert progress.promotion_counts() == (0, 1, 1)


def test_stalls_never_enter_the_signed_sample():
    store = induce_all(["e1", "e2", "e3"])
    for record in store.of_type("actionable", "failure", "precondition", "repair", "workflow"):
        n_pos, n_neg, n_stall = record.promotion_counts()
        voting = [e for e, marks in record.ledger.items() if marks & {"+", "-"}]
        assert n_pos + n_neg == len(voting)  # one signed vote per annotated episode
        assert n_stall == sum("0" in marks for marks in record.ledger.values())
