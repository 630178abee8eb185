"""MemCo retrieval (facets, filters, full rank, bounded selection) and composition/rendering.

Content tokens drop stop words (you, are, at, the, ...) and pure digits; see retrieval.py for
the formulas quoted in the comments.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from memarena.core.types import Feedback, MemoryQuery, Observation, Step, Task
from memarena.memory.memco.base import GlobalRecord
from memarena.memory.memco.compose import LABELS, compose, concat_context, stored_line
from memarena.memory.memco.query import DecisionQuery, build_query
from memarena.memory.memco.records import Record
from memarena.memory.memco.retrieval import (
    RetrievalSettings,
    global_entry,
    ground,
    hard_filtered,
    local_pool,
    record_entry,
    retrieve,
    retrieve_both,
    retrieve_pools,
    score_entries,
    select,
    transition_entry,
)


class FakeAdapter:
    env = "fake"

    def roles(self, task):
        return {"object": "soap", "destination": "vanity"}

    def state_cue(self, observation):
        return observation.lower().split(".")[0]

    def abstract_action(self, action, roles):
        return action

    def abstract_text(self, text, roles):
        return text

    def bind_action(self, abstract, roles, admissible):
        missing = [r for r in re.findall(r"<(\w+)>", abstract) if r not in roles]
        if missing:
            return None
        text = re.sub(r"<(\w+)>", lambda m: roles[m.group(1)], abstract)
        if admissible is None:
            return text
        return text if text in admissible else None


ADAPTER = FakeAdapter()
ADMISSIBLE = ("clean soap with sinkbasin", "go to vanity", "take soap from sinkbasin")


def make_query(**kw) -> DecisionQuery:
    base = dict(
        goal="put a clean soap in vanity",
        roles={"object": "soap", "destination": "vanity"},
        state="you are at sinkbasin",
        admissible=ADMISSIBLE,
        progress=0.5,
        phase="phase 1: after take soap from countertop",
        done=("go to countertop", "take soap from countertop", "go to sinkbasin"),
        last_failed=None,
        history_len=3,
    )
    base.update(kw)
    return DecisionQuery(**base)


def rec(rtype, condition, actions, outcome="progress", c_pos=0, c_neg=0, text=""):
    return Record(rtype, condition, tuple(actions), outcome, text=text, c_pos=c_pos, c_neg=c_neg)


def scored(q, records=(), transitions=(), globals_=(), settings=None):
    entries = local_pool(records, transitions) + [global_entry(g) for g in globals_]
    return {e.id: e for e in score_entries(q, entries, settings or RetrievalSettings(), ADAPTER)}


def test_build_query_phase_done_and_last_failed():
    ok, bad = Feedback(True, True), Feedback(False, False, "invalid_action")
    history = [
        Step("go to countertop", "", 0.0, 0.0, ok),
        Step("take soap from countertop", "", 0.0, 0.5, ok),
        Step("open drawer", "", 0.0, 0.5, bad),
    ]
    mq = MemoryQuery(
        task=Task("t", "fake", "test", "d", "put a clean soap in vanity"),
        observation=Observation("You are at sinkbasin. You see soap.", "g", list(ADMISSIBLE)),
        history=history,
        progress=0.5,
    )
    q = build_query(mq, ADAPTER, None)
    assert q.done == ("go to countertop", "take soap from countertop")
    assert q.last_failed == "open drawer"
    assert q.phase == "stalled after open drawer"
    assert q.state == "you are at sinkbasin"
    assert q.roles == {"object": "soap", "destination": "vanity"}
    q2 = build_query(MemoryQuery(mq.task, mq.observation, history=history[:2]), ADAPTER, None)
    assert q2.phase == "phase 1: after take soap from countertop" and q2.last_failed is None
    q0 = build_query(MemoryQuery(mq.task, mq.observation), ADAPTER, None)
    assert q0.phase == "start" and q0.history_len == 0


def test_facets_and_rank_actionable():
    r = rec("actionable", "you are at sinkbasin", ["clean soap with sinkbasin"], c_pos=3, c_neg=1)
    e = scored(make_query(), [r])[f"local:{r.key}"]
    # r_x = s_state 1 ({sinkbasin} in cue) + s_act 1 (admissible) = 2
    # r_p = 1 (progress outcome, not done); r_g = (soap ok, vanity absent) 1/2 = 0.5
    assert e.facets == {"x": 2.0, "p": 1.0, "g": 0.5}
    # s = 3.5 + d_ev (3-1)/(3+1+1)=0.4 + d_bind 0.5 (exact) + d_src 0 - p_soft 0 = 4.4
    assert e.rank == pytest.approx(4.4)


def test_facet_p_precondition_repair_workflow():
    pre = rec("precondition", "take soap from countertop", ["go to vanity"])
    pre_not = rec("precondition", "open drawer", ["go to vanity"])
    rep = rec("repair", "open drawer", ["take soap from sinkbasin"])
    wf = rec(
        "workflow",
        "put soap",
        ["take soap from countertop", "clean soap with sinkbasin", "put soap in vanity"],
        outcome="success",
    )
    wf_conflict = rec("workflow", "x", ["open safe", "take soap from countertop"], "success")
    q = make_query(last_failed="open drawer")
    s = scored(q, [pre, pre_not, rep, wf, wf_conflict])
    assert s[f"local:{pre.key}"].facets["p"] == 1.0  # condition done, action not done
    assert s[f"local:{pre_not.key}"].facets["p"] == 0.0  # condition not done yet
    assert s[f"local:{rep.key}"].facets["p"] == 1.0  # failed action == last failed
    wf_e = s[f"local:{wf.key}"]
    assert wf_e.facets["p"] == 1.0  # done prefix of length 1, step left
    assert wf_e.extra["next_action"] == "clean soap with sinkbasin"
    # its next step 'open safe' is not available: a local plan is dropped (unavailable_local=
    # drop, B.4.4); kept for ranking with hide, where its order conflict scores r_p = -1
    assert f"local:{wf_conflict.key}" not in s
    hide = scored(q, [wf_conflict], settings=RetrievalSettings(unavailable_local="hide"))
    assert hide[f"local:{wf_conflict.key}"].facets["p"] == -1.0  # later step done first
    assert hide[f"local:{wf_conflict.key}"].extra["next_action"] is None  # next step discarded
    s2 = scored(make_query(last_failed="go to drawer"), [rep])
    assert s2[f"local:{rep.key}"].facets["p"] == -1.0  # another action failed last
    # precondition: r_x = 0 (action condition) + 1 (admissible); r_g: vanity and soap -> 1
    assert s[f"local:{pre.key}"].facets["x"] == 1.0
    assert s[f"local:{pre.key}"].facets["g"] == 1.0


def test_facet_g_mismatch_from_recorded_roles():
    r = rec("actionable", "sinkbasin", ["take soap from sinkbasin"])
    r.extra["roles"] = {"object": "soap", "destination": "cabinet"}
    e = scored(make_query(), [r])[f"local:{r.key}"]
    assert e.facets["g"] == 0.0  # (soap match - destination mismatch) / 2


def test_keyed_state_facts_and_hard_filters():
    q = make_query(state="loc=bathroom; holding=soap", admissible=ADMISSIBLE)
    ok = rec("actionable", "loc=bathroom", ["go to vanity"])
    weak = rec("actionable", "loc=bathroom; holding=cup; visible=soap", ["go to vanity"], "x")
    contra = rec("actionable", "loc=kitchen", ["go to vanity"])
    unavailable = rec("actionable", "loc=bathroom", ["open cabinet"])
    warning = rec("failure", "loc=bathroom", ["open cabinet"], "fail:locked", c_pos=2)
    s = scored(q, [ok, weak, contra, unavailable, warning])
    assert f"local:{contra.key}" not in s  # required fact contradicts the state
    assert f"local:{unavailable.key}" not in s  # action not admissible
    # a warning about an action nobody can take now is filtered; about the one that just
    # failed, it is kept (and warns not to retry it)
    assert f"local:{warning.key}" not in s
    q_failed = make_query(
        state="loc=bathroom; holding=soap", admissible=ADMISSIBLE, last_failed="open cabinet"
    )
    assert f"local:{warning.key}" in scored(q_failed, [warning])
    assert s[f"local:{ok.key}"].facets["x"] == 2.0  # 1/1 fact + available
    # weak: 1 match (loc) - 1 mismatch (holding), visible absent -> 0/3; + available -> 1
    w = s[f"local:{weak.key}"]
    assert w.facets["x"] == 1.0
    # rank = 1 + p 0 + g 0.5 + ev 0 + bind 0.5 - weak mismatch 0.5 = 1.5
    assert w.rank == pytest.approx(2.0)


def test_stale_penalty_and_graph_source():
    q = make_query()
    stale = rec("actionable", "sinkbasin", ["go to sinkbasin"], c_pos=1)
    q2 = make_query(admissible=(*ADMISSIBLE, "go to sinkbasin"))
    e = scored(q2, [stale])[f"local:{stale.key}"]
    # r_x 2 + r_p 0 (done) + r_g 0 + ev 1/2 + bind 0.5 - stale 1 = 2.0
    assert e.rank == pytest.approx(2.0)
    t = dict(
        state="you are at sinkbasin",
        action="clean soap with sinkbasin",
        next_state="clean",
        count=2,
        progressed=True,
        stalled=False,
        labels=[],
        success=False,
        similarity=0.8,
    )
    r = rec("actionable", "sinkbasin", ["clean soap with sinkbasin"], "progress")
    s = scored(q, [r], [t])
    te = s[transition_entry(t).id] if transition_entry(t).id in s else None
    assert len(s) == 1  # the transition and the record are equivalent: keep the higher rank
    # record: 2 + 1 + 0.5 + 0 + 0.5 + d_src 0.25 (progressing transition ran it) = 4.25
    # transition: 2 + 1 + 0.5 + 2/3 + 0.5 + 0.5*0.8 = 5.0667 -> the transition wins
    assert te is not None and te.rank == pytest.approx(5.0667, abs=1e-4)


def test_facet_coverage_then_rank():
    q = make_query()
    a = rec("actionable", "sinkbasin", ["clean soap with sinkbasin"], "state_change", c_pos=10)
    b = rec("actionable", "sinkbasin", ["take soap from sinkbasin"], "state_change", c_pos=9)
    c = rec("precondition", "go to sinkbasin", ["go to vanity"], c_neg=5)
    ranked = score_entries(q, local_pool([a, b, c], []), RetrievalSettings(), ADAPTER)
    ids = {"a": f"local:{a.key}", "b": f"local:{b.key}", "c": f"local:{c.key}"}
    # ranks: a 2+0+0.5+10/11+0.5 = 3.909, b 3.9, c 1+1+0.5-5/6+0.5 = 2.167
    assert [e.id for e in ranked] == [ids["a"], ids["b"], ids["c"]]
    # k=2: facet x -> a (x=2, ties by rank); facet p -> c (only p>0); then full
    assert [e.id for e in select(ranked, 2, ("x", "p", "g"))] == [ids["a"], ids["c"]]
    assert [e.id for e in select(ranked, 2, ())] == [ids["a"], ids["b"]]
    sel = retrieve(q, local_pool([a, b, c], []), 2, RetrievalSettings(), ADAPTER)
    assert [e.id for e in sel] == [ids["a"], ids["c"]]
    # empty facet set: all-zero relevance control ranks by the other terms only
    ctrl = score_entries(q, local_pool([a, c], []), RetrievalSettings(facets=()), ADAPTER)
    assert [round(e.rank, 4) for e in ctrl] == [1.4091, -0.3333]


GLOBAL_WF = GlobalRecord(
    key="workflow:g1",
    type="workflow",
    condition="put <object>",
    actions=(
        "take <object> from countertop",
        "clean <object> with sinkbasin",
        "put <object> in <destination>",
    ),
    outcome="success",
    n_pos=3,
    n_neg=0,
    n_stall=0,
    score=0.53,
    rho=1.0,
    c_pos=4,
    sources=["a1", "a2", "a3"],
)
GLOBAL_TOOL = GlobalRecord(
    key="actionable:g2",
    type="actionable",
    condition="",
    actions=("heat <object> with <tool>",),
    outcome="progress",
    n_pos=2,
    n_neg=0,
    n_stall=0,
    score=0.43,
    rho=1.0,
    c_pos=2,
)
GLOBAL_UNAVAILABLE = GlobalRecord(
    key="actionable:g3",
    type="actionable",
    condition="",
    actions=("put <object> in <destination>",),
    outcome="progress",
    n_pos=2,
    n_neg=0,
    n_stall=0,
    score=0.43,
    rho=1.0,
    c_pos=2,
)


def test_global_binding_in_retrieval():
    s = scored(make_query(), globals_=[GLOBAL_WF, GLOBAL_TOOL, GLOBAL_UNAVAILABLE])
    assert set(s) == {"global:workflow:g1"}  # <tool> unbound; bound put-action not admissible
    e = s["global:workflow:g1"]
    assert e.bound_actions == (
        "take soap from countertop",
        "clean soap with sinkbasin",
        "put soap in vanity",
    )
    assert e.extra["next_action"] == "clean soap with sinkbasin"
    # r_x: "put <object>" -> {put, soap}: 1/2 in cue? no -> 0 + s_act 1 = 1; r_p 1; r_g 1
    assert e.facets == {"x": 1.0, "p": 1.0, "g": 1.0}
    # 3 + ev 4/5 + bind 0.25 (role) + src 0.25*2 = 4.55
    assert e.rank == pytest.approx(4.55)


def test_compose_roles_binding_override_and_render():
    q = make_query(last_failed="open drawer")
    local = local_pool(
        [
            rec("actionable", "sinkbasin", ["take soap from sinkbasin"], c_pos=2),
            rec("failure", "sinkbasin", ["open drawer"], "fail:locked", c_pos=2),
            rec("repair", "open drawer", ["go to vanity"], "progress", c_pos=1),
            rec("precondition", "take soap from countertop", ["go to vanity"]),
        ],
        [],
    )
    settings = RetrievalSettings()
    sel_local = retrieve(q, local, 5, settings, ADAPTER)
    glob = [global_entry(g) for g in (GLOBAL_WF, GLOBAL_TOOL, GLOBAL_UNAVAILABLE)]
    # compose binds globals itself: the unbindable and unavailable ones are excluded
    for e in glob:
        e.rank = 1.0
    out = compose(sel_local, glob, q, ADAPTER, max_items_per_role=3)
    kinds = {h: [e.kind for e in es] for h, es in out.roles.items()}
    assert kinds["ground"] == ["actionable"]
    assert sorted(kinds["workflow"]) == ["precondition", "workflow"]
    assert sorted(kinds["reflection"]) == ["failure", "repair"]
    assert "global:actionable:g2" not in out.memory_ids
    assert "global:actionable:g3" not in out.memory_ids
    lines = out.text.splitlines()
    assert lines[0] == "### MemCo Memory Decision Summary"
    assert [ln.split(":", 1)[0] for ln in lines[1:]] == list(LABELS)
    assert lines[1] == "Current phase: phase 1: after take soap from countertop"
    assert "clean soap with sinkbasin" in lines[4]  # bound global workflow, current roles
    assert "<object>" not in out.text
    assert "avoid 'open drawer'" in lines[5]
    assert lines[7].startswith("Confidence / caveat:") and "prefer currently valid" in lines[7]
    ctx = out.to_context()
    assert ctx.slots == {"planner_notes": out.text} and ctx.memory_ids == out.memory_ids


def test_local_grounding_overrides_abstract_step():
    q = make_query(admissible=(*ADMISSIBLE, "clean soap with basin"))
    g = GlobalRecord(
        key="actionable:g4",
        type="actionable",
        condition="",
        outcome="progress",
        actions=("clean <object> with sinkbasin",),
        n_pos=2,
        n_neg=0,
        n_stall=0,
        score=0.4,
        rho=1.0,
    )
    local = [record_entry(rec("actionable", "sinkbasin", ["clean soap with basin"], c_pos=1))]
    local[0].extra["next_action"] = "clean soap with basin"
    out = compose(local, [global_entry(g)], q, ADAPTER)
    assert out.memory_ids == [local[0].id]  # same step (clean soap), different action
    wf = compose(local, [global_entry(GLOBAL_WF)], q, ADAPTER)
    assert wf.memory_ids == [local[0].id, "global:workflow:g1"]
    assert "Next priority: clean soap with basin" in wf.text  # local grounding of the step


def test_budget_and_dedupe_per_role():
    q = make_query()
    recs = [rec("reflection", "", [], "x", text=f"note {i}", c_pos=i) for i in range(5)]
    recs.append(rec("reflection", "y", [], "x", text="note 4"))
    sel = retrieve(q, local_pool(recs, []), 6, RetrievalSettings(), ADAPTER)
    assert len(sel) == 5  # dedupe by text when there are no steps
    out = compose(sel, [], q, ADAPTER, max_items_per_role=2)
    assert [e.text for e in out.roles["reflection"]] == ["note 4", "note 3"]


def test_concat_mode_lists_the_retrieved_entries_as_stored():
    """L5+G5 on two steps: R(q, M, k) per source (query-dependent), then listed as stored."""
    local = local_pool(
        [
            rec("actionable", "you are at sinkbasin", ["clean soap with sinkbasin"], c_pos=1),
            rec("actionable", "you arrive at vanity", ["put soap in vanity"], c_pos=1),
            rec("actionable", "you are at sinkbasin", ["go to vanity"], "state_change", c_pos=9),
            rec("precondition", "clean soap with sinkbasin", ["go to vanity"], c_pos=1),
        ],
        [],
    )
    glob = [global_entry(g) for g in (GLOBAL_WF, GLOBAL_TOOL, GLOBAL_UNAVAILABLE)]
    settings = RetrievalSettings(k_local=2, k_global=1)
    at_sink = make_query()
    at_vanity = make_query(
        state="you arrive at vanity",
        admissible=("put soap in vanity", "go to sinkbasin"),
        done=(*at_sink.done, "clean soap with sinkbasin", "go to vanity"),
    )
    shown = {}
    for name, q in {"sink": at_sink, "vanity": at_vanity}.items():
        picked = retrieve_pools(q, local, glob, ADAPTER, settings)
        out = concat_context(picked.local, picked.global_)
        ranked = score_entries(q, local, settings, ADAPTER)
        assert picked.local == select(ranked, 2, settings.facets)  # MemCo's R, top k
        assert out.memory_ids == [e.id for e in picked.local + picked.global_]
        listed = [ln for ln in out.text.splitlines() if ln.startswith("- ")]
        assert listed == [stored_line(e) for e in picked.local + picked.global_]
        shown[name] = out.memory_ids
    # at the sink: the clean step and its precondition; at the vanity: the put step
    assert shown == {
        "sink": [local[0].id, local[3].id, "global:workflow:g1"],
        "vanity": [local[1].id, "global:workflow:g1"],
    }
    # global records stay as stored: placeholders, no binding, no Decision Summary
    wf = concat_context([], [global_entry(GLOBAL_WF)])
    assert "put <object> in <destination>" in wf.text and "Decision Summary" not in wf.text
    assert concat_context([], []).text == ""


class BagEmbedder:
    vocab = ("soap", "vanity", "drawer", "stuck")

    def encode(self, texts):
        return np.array([[t.lower().count(w) for w in self.vocab] for t in texts], dtype=float)


def test_cosine_and_bm25_scorers():
    q = make_query(goal="put soap in vanity", state="at sinkbasin", phase="start")
    a = rec("reflection", "", [], "x", text="soap goes in the vanity")
    b = rec("reflection", "", [], "x", text="the drawer is stuck")
    pool = local_pool([a, b], [])
    cos = score_entries(q, pool, RetrievalSettings(scorer="cosine"), ADAPTER, BagEmbedder())
    # query bag (1,1,0,0) vs a (1,1,0,0) -> 1.0, vs b (0,0,1,1) -> 0.0
    assert [(e.text, e.extra["relevance"]) for e in cos] == [
        ("soap goes in the vanity", pytest.approx(1.0)),
        ("the drawer is stuck", pytest.approx(0.0)),
    ]
    bm = score_entries(q, pool, RetrievalSettings(scorer="bm25"), ADAPTER)
    assert bm[0].text == "soap goes in the vanity" and bm[0].extra["relevance"] == 1.0
    assert bm[1].extra["relevance"] == 0.0
    with pytest.raises(ValueError):
        RetrievalSettings(scorer="dense")


def test_empty_memory_gives_empty_context():
    q = make_query()
    got = retrieve_both(q, [], [], [], ADAPTER)
    assert got.local == [] and got.global_ == []
    out = compose([], [], q, ADAPTER)
    assert out.text == "" and out.memory_ids == []
    assert out.to_context().slots == {} and out.to_context().memory_ids == []


def test_ground_helper_plan_all_done_is_stale():
    q = make_query()
    wf = record_entry(rec("workflow", "", ["go to countertop", "go to sinkbasin"], "success"))
    g = ground(wf, q, ADAPTER)
    assert g.next_action is None and not hard_filtered(wf, q, g)
