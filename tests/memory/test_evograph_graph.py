"""EvoGraph-Mem insight graph and graph controller (evograph_mem.txt, Sections 3.2-3.4).

Every operation is checked against its equation on the node tuple (kappa, Omega+, Omega-, z);
the controller runs against a scripted LLM double that returns given JSON per request.
"""

from __future__ import annotations

import json

import pytest

from memarena.core.llm_types import Completion
from memarena.core.types import Feedback, Outcome, Step, Task, Trajectory, Usage
from memarena.llm.base import json_matches_schema
from memarena.memory.evograph.controller import (
    ControllerItem,
    Decision,
    GraphController,
    apply_decision,
    controller_schema,
    fit_trajectory,
    trajectory_text,
)
from memarena.memory.evograph.insight_graph import EvoInsight, InsightGraph


class ScriptedLLM:
    """LLM double: answers the n-th request with the n-th scripted text, records requests."""

    name = "scripted"

    def __init__(self, outputs: list[str | dict]) -> None:
        self.outputs = [o if isinstance(o, str) else json.dumps(o) for o in outputs]
        self.requests = []
        self.calls = 0
        self.usage = Usage()

    def generate(self, requests):
        self.calls += 1
        out = []
        for request in requests:
            text = self.outputs[len(self.requests)]
            self.requests.append(request)
            out.append(Completion(text, prompt_tokens=100, completion_tokens=20))
        return out

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)


def state(graph: InsightGraph, node_id: str):
    n = graph.nodes[node_id]
    return n.content, n.pos, n.neg, n.active


def item(q: str, ids: list[str], graph: InsightGraph, status: str = "Resolved"):
    return ControllerItem(
        q, status, "3 steps, answered SUPPORTS", [(i, graph.nodes[i].content) for i in ids]
    )


def two_node_graph() -> tuple[InsightGraph, str, str]:
    g = InsightGraph()
    a = g.add("Check dates before matching names.", "q1")
    b = g.add("Search the full title first.", "q2")
    return g, a, b


# -- operations -------------------------------------------------------------------------------
def test_add_is_eq16():
    g = InsightGraph()
    k = g.add("Prefer primary sources.", "q1")
    assert k == "ins-0001"
    assert state(g, k) == ("Prefer primary sources.", {"q1"}, set(), True)
    n = g.nodes[k]
    assert (n.version, n.parent, n.created_at) == (1, None, "q1")
    assert n.trace == [{"query": "q1", "op": "ADD", "detail": None}]


def test_keep_is_eq17():
    g, a, _ = two_node_graph()
    g.nodes[a].neg.add("q0")
    g.keep(a, "q3")
    # (kappa, Omega+ | {q}, Omega-, 1)
    assert state(g, a) == ("Check dates before matching names.", {"q1", "q3"}, {"q0"}, True)
    assert g.nodes[a].trace[-1] == {"query": "q3", "op": "KEEP", "detail": None}
    assert g.candidates({"q3"}) == [a]


def test_archive_is_eq13():
    g, a, _ = two_node_graph()
    g.archive(a, "q3")
    # (kappa, Omega+, Omega- | {q}, 0)
    assert state(g, a) == ("Check dates before matching names.", {"q1"}, {"q3"}, False)
    assert g.nodes[a].trace[-1]["op"] == "ARCHIVE"
    assert g.candidates({"q1", "q3"}) == []
    assert a in g.nodes  # retained for auditability


def test_revise_is_eq14_15():
    g, a, _ = two_node_graph()
    g.keep(a, "q3")
    new = g.revise(a, "q4", "Check dates before matching names, unless the claim has none.")
    # old: (kappa, Omega+, Omega- | {q}, 0); new: (kappa', Omega+ | {q}, {}, 1)
    assert state(g, a) == ("Check dates before matching names.", {"q1", "q3"}, {"q4"}, False)
    assert state(g, new) == (
        "Check dates before matching names, unless the claim has none.",
        {"q1", "q3", "q4"},
        set(),
        True,
    )
    assert (g.nodes[new].version, g.nodes[new].parent, g.nodes[new].created_at) == (2, a, "q4")
    assert g.nodes[a].trace[-1] == {"query": "q4", "op": "REVISE", "detail": new}
    assert g.nodes[new].trace == [{"query": "q4", "op": "REVISED_FROM", "detail": a}]
    assert g.candidates({"q1", "q3", "q4"}) == [new]


def test_edges_only_when_resolved_no_duplicates_and_kept_after_archive():
    g, a, b = two_node_graph()
    c = g.add("new", "q5")
    assert g.update_edges([a, b], [c], "q5", resolved=False) == []
    assert g.edges == []
    assert g.update_edges([a, b], [c], "q5", resolved=True) == [(a, c, "q5"), (b, c, "q5")]
    g.update_edges([a, b], [c], "q5", resolved=True)
    assert g.edges == [(a, c, "q5"), (b, c, "q5")]
    g.archive(a, "q6")
    assert (a, c, "q5") in g.edges


# -- retrieval --------------------------------------------------------------------------------
def test_conflicting_evidence_ranking_and_lambda():
    g = InsightGraph()
    x = g.add("x", "q1")
    y = g.add("y", "q1")
    for q in ("q2", "q3"):
        g.keep(x, q)  # x: Omega+ = {q1, q2, q3}
    g.keep(y, "q2")  # y: Omega+ = {q1, q2}
    g.nodes[x].neg.update({"q7", "q8"})  # x conflicts with two queries of Q~
    expanded = {"q1", "q2", "q3", "q7", "q8"}
    # lam=0: r_x = 3, r_y = 2 ; lam=1: r_x = 3 - 2 = 1, r_y = 2 - 0 = 2
    assert g.utility(g.nodes[x], expanded, 0.0) == 3
    assert g.utility(g.nodes[x], expanded, 1.0) == 1
    assert g.select(expanded, lam=0.0, top_b=2) == [x, y]
    assert g.select(expanded, lam=1.0, top_b=2) == [y, x]
    assert g.select(expanded, lam=1.0, top_b=1) == [y]
    # without the conflicting queries in Q~ the penalty does not apply
    assert g.select({"q1", "q2", "q3"}, lam=1.0, top_b=2) == [x, y]


def test_ties_broken_by_support_then_id():
    g = InsightGraph()
    a = g.add("a", "q1")
    b = g.add("b", "q1")
    c = g.add("c", "q1")
    g.keep(c, "q2")
    g.keep(c, "q3")
    g.nodes[c].neg.add("q4")
    # r_a = r_b = 1 (s=1); r_c = 3 - 2*1 = 1 with lam=2 but s=3 -> c first, then a, b by id
    assert g.select({"q1", "q2", "q3", "q4"}, lam=2.0, top_b=3) == [c, a, b]


def test_archived_never_retrieved_also_after_revise_and_load():
    g, a, b = two_node_graph()
    g.archive(b, "q3")
    new = g.revise(a, "q3", "narrower")
    everything = {"q1", "q2", "q3"}
    assert g.select(everything, 0.0, 10) == [new]
    loaded = InsightGraph.from_dict(json.loads(json.dumps(g.to_dict())))
    assert loaded.select(everything, 0.0, 10) == [new]
    assert loaded.candidates(everything) == [new]
    assert loaded.add("later", "q9") == "ins-0004"


# -- history and persistence ------------------------------------------------------------------
def test_history_of_twice_revised_insight():
    g = InsightGraph()
    v1 = g.add("Names decide identity.", "q1")
    v2 = g.revise(v1, "q2", "Names decide identity when dates agree.")
    g.keep(v2, "q3")
    v3 = g.revise(v2, "q4", "Names and dates decide identity for people only.")
    for probe in (v1, v2, v3):
        chain = g.history(probe)
        assert [h["id"] for h in chain] == [v1, v2, v3]
    chain = g.history(v2)
    assert [h["version"] for h in chain] == [1, 2, 3]
    assert [h["active"] for h in chain] == [False, False, True]
    assert [h["pos"] for h in chain] == [["q1"], ["q1", "q2", "q3"], ["q1", "q2", "q3", "q4"]]
    assert [h["neg"] for h in chain] == [["q2"], ["q4"], []]
    assert [t["op"] for t in chain[1]["trace"]] == ["REVISED_FROM", "KEEP", "REVISE"]


def test_round_trip():
    g, a, b = two_node_graph()
    new = g.revise(a, "q3", "revised")
    g.update_edges([a, b], [new], "q3", True)
    data = g.to_dict()
    assert data["nodes"][0]["pos"] == ["q1"]
    loaded = InsightGraph.from_dict(json.loads(json.dumps(data)))
    assert loaded.to_dict() == data
    assert loaded.history(new) == g.history(new)
    node = g.nodes[new]
    assert EvoInsight.from_dict(node.to_dict()) == node


# -- controller -------------------------------------------------------------------------------
def test_controller_batch_applies_every_operation():
    g = InsightGraph()
    k, r, x = g.add("keep me", "q1"), g.add("revise me", "q1"), g.add("archive me", "q1")
    out1 = {
        k: {"op": "KEEP", "revision": ""},
        r: {"op": "REVISE", "revision": "revised"},
        x: {"op": "ARCHIVE", "revision": ""},
        "add": True,
        "insight": "brand new",
    }
    out2 = {"add": False, "insight": ""}
    llm = ScriptedLLM([out1, out2])
    ctl = GraphController(llm)
    decisions = ctl.decide([item("q2", [k, r, x], g), ("q9", "Failed", "t", [])])
    assert llm.calls == 1 and len(llm.requests) == 2
    schema = llm.requests[0].json_schema
    assert json_matches_schema(json.dumps(out1), schema)
    assert schema["properties"][k]["properties"]["op"]["enum"] == ["KEEP", "ARCHIVE", "REVISE"]
    assert decisions[1] == Decision()
    new_ids = apply_decision(g, decisions[0], "q2", resolved=True)
    assert len(new_ids) == 2
    rev, added = new_ids
    assert state(g, k) == ("keep me", {"q1", "q2"}, set(), True)
    assert state(g, r) == ("revise me", {"q1"}, {"q2"}, False)
    assert state(g, rev) == ("revised", {"q1", "q2"}, set(), True)
    assert state(g, x) == ("archive me", {"q1"}, {"q2"}, False)
    assert state(g, added) == ("brand new", {"q2"}, set(), True)
    assert set(g.edges) == {(a, b, "q2") for a in (k, r, x) for b in (rev, added)}
    assert ctl.stats["KEEP"] == ctl.stats["REVISE"] == ctl.stats["ARCHIVE"] == 1
    assert ctl.stats["ADD"] == 1 and ctl.stats["prompt_tokens"] == 200
    assert ctl.stats["completion_tokens"] == 40 and ctl.fallbacks == 0


def test_failed_task_adds_no_edges():
    g = InsightGraph()
    k = g.add("k", "q1")
    llm = ScriptedLLM([{k: {"op": "KEEP", "revision": ""}, "add": True, "insight": "lesson"}])
    ctl = GraphController(llm)
    (decision,) = ctl.decide([item("q2", [k], g, "Failed")])
    new_ids = apply_decision(g, decision, "q2", resolved=False)
    assert len(new_ids) == 1 and g.edges == []


@pytest.mark.parametrize("output", ["not json at all", '["KEEP"]'])
def test_unusable_output_is_counted_fallback_and_changes_nothing(output):
    g = InsightGraph()
    k = g.add("k", "q1")
    before = g.to_dict()
    llm = ScriptedLLM([output])
    ctl = GraphController(llm)
    (decision,) = ctl.decide([item("q2", [k], g)])
    assert decision.fallback and decision.ops == {} and not decision.add
    assert apply_decision(g, decision, "q2", resolved=True) == []
    assert g.to_dict() == before
    assert ctl.fallbacks == 1 and ctl.stats["fallbacks"] == 1 and ctl.stats["invalid_ops"] == 0
    assert llm.usage.fallbacks == {"evograph_controller": 1}


@pytest.mark.parametrize(
    ("output", "kept"),
    [
        (
            {"ins-0001": {"op": "KEEP", "revision": ""}, "ins-0099": {"op": "KEEP"}, "add": False},
            True,
        ),  # an edit of an id that was not retrieved
        ({"ins-0001": {"op": "DELETE", "revision": ""}, "add": False, "insight": ""}, False),
        ({"ins-0001": {"op": "REVISE", "revision": "  "}, "add": False, "insight": ""}, False),
        ({"ins-0001": {"op": "REVISE"}, "add": False, "insight": ""}, False),
        ({"ins-0001": {"op": "KEEP", "revision": ""}, "add": True, "insight": ""}, True),
        ({"add": False, "insight": ""}, False),  # the retrieved insight has no edit
    ],
)
def test_each_invalid_operation_is_its_own_fallback(output, kept):
    g = InsightGraph()
    k = g.add("k", "q1")
    llm = ScriptedLLM([output])
    ctl = GraphController(llm)
    (decision,) = ctl.decide([item("q2", [k], g)])
    assert not decision.fallback and len(decision.invalid) == 1 and not decision.add
    assert decision.ops == ({k: "KEEP"} if kept else {})
    apply_decision(g, decision, "q2", resolved=True)
    assert state(g, k) == ("k", {"q1", "q2"} if kept else {"q1"}, set(), True)
    assert len(g) == 1 and ctl.fallbacks == 0 and ctl.stats["invalid_ops"] == 1
    assert llm.usage.fallbacks == {"evograph_controller_op": 1}


@pytest.mark.parametrize(
    "bad_revise",
    [
        {"op": "REVISE", "revision": ""},  # a retrieved insight revised without a text
        None,  # ... or revised under an id that was never retrieved
    ],
)
def test_valid_ops_applied_despite_one_bad_revise(bad_revise):
    g = InsightGraph()
    a, b = g.add("archive me", "q1"), g.add("leave me", "q1")
    answer = {a: {"op": "ARCHIVE", "revision": ""}, "add": True, "insight": "A new lesson."}
    if bad_revise is None:
        answer["ins-0099"] = {"op": "REVISE", "revision": "better"}
        answer[b] = {"op": "KEEP", "revision": ""}
    else:
        answer[b] = bad_revise
    llm = ScriptedLLM([answer])
    ctl = GraphController(llm)
    (decision,) = ctl.decide([item("q2", [a, b], g)])
    new_ids = apply_decision(g, decision, "q2", resolved=True)
    assert state(g, a) == ("archive me", {"q1"}, {"q2"}, False)  # ARCHIVE applied
    (added,) = new_ids
    assert state(g, added) == ("A new lesson.", {"q2"}, set(), True)  # ADD applied
    assert g.nodes[b].active and g.nodes[b].content == "leave me" and g.nodes[b].neg == set()
    assert "ins-0099" not in g.nodes and len(g) == 3
    assert set(g.edges) == {(a, added, "q2"), (b, added, "q2")}  # Eq. 18: every retrieved
    assert ctl.stats["invalid_ops"] == 1 and ctl.stats["ARCHIVE"] == ctl.stats["ADD"] == 1
    assert ctl.fallbacks == 0 and llm.usage.fallbacks == {"evograph_controller_op": 1}


def _steps(n: int, obs_chars: int = 0, failing_at: int | None = None) -> list[Step]:
    """n steps "act i" -> "obs i" (padded with x to ``obs_chars``); step ``failing_at`` fails."""

    def step(i: int) -> Step:
        ok = i != failing_at
        obs = f"obs {i}".ljust(obs_chars, "x")
        return Step(f"act {i}", obs, 0.0, 0.1, Feedback(ok, ok, None if ok else "precondition"))

    return [step(i) for i in range(1, n + 1)]


def test_trajectory_text_is_the_full_trajectory_and_final_answer():
    steps = _steps(30, failing_at=7)
    steps[-1] = Step(
        "Finish[Kessby]", "Episode finished, reward = 0", 0.0, 0.4, Feedback(True, True)
    )
    t = Trajectory(Task("q", "hotpotqa", "test", "d", "goal"), "Question: where?\nline 2", steps)
    text = trajectory_text(t, Outcome(False, 0.4, 30, "budget"))
    lines = text.splitlines()
    assert lines[:3] == ["Start: Question: where?", "line 2", "1. > act 1 -> obs 1"]
    assert "7. > act 7 -> obs 7 [failed: precondition]" in lines  # the failing step, marked
    assert all(f"{i}. > act {i} -> obs {i}" in lines for i in range(1, 30) if i != 7)  # all
    assert lines[-3:] == [
        "30. > Finish[Kessby] -> Episode finished, reward = 0",
        "Final answer (the agent's last action): Finish[Kessby]",
        "Final outcome: Failed (status budget, progress 0.40, 30 steps)",
    ]
    assert "left out" not in text
    # fits: returned as it is, not cut
    assert fit_trajectory(t, Outcome(False, 0.4, 30, "budget"), len(text)) == (text, False)
    empty = trajectory_text(Trajectory(t.task, "start", []))
    assert empty.splitlines() == [
        "Start: start",
        "(no steps)",
        "Final answer (the agent's last action): (none)",
    ]


def test_fit_clips_the_longest_texts_first_and_keeps_every_step():
    steps = _steps(10, obs_chars=50)
    steps[3] = Step("act 4", "y" * 5000, 0.0, 0.1, Feedback(True, True))  # one huge observation
    t = Trajectory(Task("q", "pddl", "test", "d", "goal"), "start", steps)
    full = trajectory_text(t)
    room = len(full) - 4000
    text, cut = fit_trajectory(t, None, room)
    assert cut and len(text) <= room
    for i in (1, 2, 3, 5, 6, 7, 8, 9, 10):  # the short steps are left as they were
        assert f"{i}. > act {i} -> {steps[i - 1].observation}" in text
    (line,) = [x for x in text.splitlines() if x.startswith("4. > act 4 -> ")]
    assert line.endswith("...") and 950 < len(line) < 1050  # only the long text was clipped


def test_fit_leaves_out_middle_steps_only_when_clipping_is_not_enough():
    t = Trajectory(
        Task("q", "pddl", "test", "d", "goal"), "start", _steps(400, obs_chars=300, failing_at=7)
    )
    outcome = Outcome(False, 0.0, 400, "budget")
    text, cut = fit_trajectory(t, outcome, 6000)
    lines = text.splitlines()
    assert cut and len(text) <= 6000
    assert lines[1].startswith("1. > act 1 -> obs 1x") and lines[2].startswith("2. > act 2 -> ")
    assert any(
        x.startswith("7. > act 7 -> ") and x.endswith("[failed: precondition]") for x in lines
    )
    assert any(x.startswith("400. > act 400 -> ") for x in lines)  # the last step
    assert "steps left out to fit the context" in text
    assert lines[-2:] == [
        "Final answer (the agent's last action): act 400",
        "Final outcome: Failed (status budget, progress 0.00, 400 steps)",
    ]
    given, cut = fit_trajectory("a" * 50 + "b" * 50, None, 90)  # a text given as a string
    assert cut and given.startswith("a") and given.endswith("b") and "left out" in given


def test_keep_mode_on_a_failed_query():
    # node k: (kappa, {q1}, {q0}, 1); the controller KEEPs it on the failed query q2 and ADDs
    for mode, pos in (("reinforce", {"q1", "q2"}), ("untouched", {"q1"})):
        g = InsightGraph()
        k = g.add("k", "q1")
        g.nodes[k].neg.add("q0")
        trace = list(g.nodes[k].trace)
        d = Decision(ops={k: "KEEP"}, retrieved=[k], add=True, new_insight="lesson")
        (new,) = apply_decision(g, d, "q2", resolved=False, keep_mode=mode)
        # reinforce (Eq. 17): (k, {q1} | {q2}, {q0}, 1); untouched: (k, {q1}, {q0}, 1)
        assert state(g, k) == ("k", pos, {"q0"}, True)
        assert state(g, new) == ("lesson", {"q2"}, set(), True)  # Eq. 16 either way
        assert g.edges == []  # failed: no Eq. 18 edges
        # r at Q~ = {q0, q1, q2}, lambda 1: reinforce 2 - 1 = 1, untouched 1 - 1 = 0
        assert g.utility(g.nodes[k], {"q0", "q1", "q2"}, 1.0) == len(pos) - 1
        if mode == "untouched":
            assert g.nodes[k].trace == trace  # not touched at all
    with pytest.raises(ValueError, match="keep_mode"):
        apply_decision(InsightGraph(), Decision(), "q", True, keep_mode="grow")


@pytest.mark.parametrize(
    ("allowed", "bad_op"),
    [(("KEEP",), "ARCHIVE"), (("KEEP",), "REVISE"), (("KEEP", "ARCHIVE"), "REVISE")],
)
def test_ablation_allowed_ops_enforced(allowed, bad_op):
    g = InsightGraph()
    k = g.add("k", "q1")
    ok = {k: {"op": allowed[-1]}, "add": False, "insight": ""}
    bad = {k: {"op": bad_op, "revision": "x"}, "add": False, "insight": ""}
    llm = ScriptedLLM([ok, bad])
    ctl = GraphController(llm, allowed_ops=allowed)
    good, rejected = ctl.decide([item("q2", [k], g), item("q3", [k], g)])
    schema = llm.requests[0].json_schema
    assert schema["properties"][k]["properties"]["op"]["enum"] == list(allowed)
    assert "revision" not in schema["properties"][k]["properties"]
    assert not json_matches_schema(json.dumps(bad), schema)
    assert good.ops == {k: allowed[-1]} and not good.fallback
    assert rejected.ops == {} and len(rejected.invalid) == 1 and ctl.stats["invalid_ops"] == 1
    system = llm.requests[0].messages[0]["content"]
    assert "REVISE:" not in system


def test_add_disabled_and_schema_reserved_ids():
    g = InsightGraph()
    k = g.add("k", "q1")
    llm = ScriptedLLM([{k: {"op": "KEEP", "revision": ""}, "add": True, "insight": "x"}])
    ctl = GraphController(llm, allow_add=False)
    assert ctl.decide([("q0", "Resolved", "t", [])]) == [Decision()] and llm.calls == 0
    (decision,) = ctl.decide([item("q2", [k], g)])
    assert decision.ops == {k: "KEEP"} and not decision.add  # the ADD alone is invalid
    assert decision.invalid == ["add is disabled"] and not decision.fallback
    assert "add" not in controller_schema([k], allow_add=False)["properties"]
    with pytest.raises(ValueError):
        controller_schema(["add"])
