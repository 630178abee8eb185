"""MemCo global promotion: Wilson bound, role abstraction, pre-promotion checks, rebuild."""

from __future__ import annotations

import math

import pytest

from memarena.core.types import Task
from memarena.memory.memco.abstraction import abstract, global_key
from memarena.memory.memco.checks import informative, structural
from memarena.memory.memco.global_memory import GlobalSnapshot, rebuild
from memarena.memory.memco.records import Record, RecordStore
from memarena.memory.memco.roles import ADAPTERS, GENERIC, adapter_for
from memarena.memory.memco.wilson import wilson_lower_bound, z_value

# -- Wilson bound (Eq. 4, Theorem 3.1, Corollary D.1) ------------------------------------------


def test_wilson_reference_values():
    assert round(wilson_lower_bound(2, 0), 4) == 0.4250
    assert round(wilson_lower_bound(3, 0), 4) == 0.5258
    assert round(wilson_lower_bound(3, 1), 4) == 0.3562


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_theorem_3_1_correction(alpha):
    z = z_value(alpha)
    for n_pos in range(61):
        for n_neg in range(61):
            s = n_pos + n_neg
            if s == 0:
                continue
            w = wilson_lower_bound(n_pos, n_neg, alpha)
            eps = n_pos / s - w
            assert -1e-9 <= eps <= z / (2 * math.sqrt(s)) + 1e-9
            assert eps == pytest.approx(z * math.sqrt(w * (1 - w) / s), abs=1e-9)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
@pytest.mark.parametrize("lam", [0.25, 0.35, 0.5, 0.7])
def test_corollary_d1_threshold(alpha, lam):
    z = z_value(alpha)
    for s in range(1, 61):
        need = math.ceil(s * lam + z * math.sqrt(s * lam * (1 - lam)))
        for n_pos in range(s + 1):
            assert (wilson_lower_bound(n_pos, s - n_pos, alpha) >= lam) == (n_pos >= need)
    s_min = math.ceil(z * z * lam / (1 - lam))
    assert wilson_lower_bound(s_min, 0, alpha) >= lam
    assert wilson_lower_bound(s_min - 1, 0, alpha) < lam


# -- roles and abstraction on real env strings -------------------------------------------------


def alf_task(obj, dest, kind="clean"):
    params = {"object_target": obj, "parent_target": dest, "toggle_target": ""}
    payload = {"task_type": f"pick_{kind}_then_place_in_recep", "pddl_params": params}
    goal = f"put a {kind} {obj.lower()} in {dest.lower()}"
    return Task("t", "alfworld", "test", "d", goal, payload)


def pddl_task(goal_atoms):
    pddl = f"(define (problem p) (:init (arm-empty)) (:goal (and {goal_atoms})))"
    return Task("t", "pddl", "test", "blocksworld", "goal", {"problem_pddl": pddl})


def task(env, goal):
    return Task("t", env, "test", "d", goal, {})


def rec(rtype, condition, actions, outcome="success", roles=None, text=""):
    return Record(rtype, condition, tuple(actions), outcome, text=text, extra={"roles": roles})


def key_of(env, task_, rtype, condition, actions, outcome="success"):
    adapter = adapter_for(env)
    roles = adapter.roles(task_)
    form = abstract(rec(rtype, condition, actions, outcome), roles, adapter)
    assert form is not None
    return form


def test_adapter_lookup_by_prefix():
    assert set(ADAPTERS) == {"pddl", "alfworld", "scienceworld", "fever", "hotpotqa"}
    assert adapter_for("fever_smoke") is ADAPTERS["fever"]
    assert adapter_for("hotpotqa_distractor") is ADAPTERS["hotpotqa"]
    assert adapter_for("minigrid") is GENERIC
    assert GENERIC.abstract_action("open drawer 3", {}) == "open drawer"


def test_alfworld_roles_actions_and_binding():
    a = adapter_for("alfworld")
    roles = a.roles(alf_task("Mug", "Cabinet"))
    assert roles == {"object": "mug", "destination": "cabinet", "tool": "sinkbasin"}
    assert (
        a.abstract_action("take mug 1 from countertop 2", roles) == "take <object> from countertop"
    )
    assert a.abstract_action("clean mug 1 with sinkbasin 1", roles) == "clean <object> with <tool>"
    assert a.abstract_action("go to cabinet 3", roles) == "go to <destination>"
    admissible = ["go to cabinet 1", "take mug 2 from countertop 1", "put mug 2 in/on cabinet 1"]
    assert a.bind_action("take <object> from countertop", roles, admissible) == admissible[1]
    assert a.bind_action("put <object> in/on <destination>", roles, admissible) == admissible[2]
    assert a.bind_action("clean <object> with <tool>", roles, admissible) is None
    apple = a.roles(alf_task("Apple", "Fridge"))
    assert a.bind_action("take <object> from countertop", apple, admissible) is None
    cue = "You arrive at countertop 2. On the countertop 2, you see a mug 1, a knife 3."
    assert a.state_cue(cue) == "you arrive at countertop"
    assert a.state_cue("You pick up the mug 1 from the countertop 2.") == (
        "you pick up the mug from the countertop"
    )


def test_alfworld_table8_merge_and_table9_split():
    mug = key_of(
        "alfworld",
        alf_task("Mug", "Cabinet"),
        "workflow",
        "you arrive at countertop",
        [
            "take mug 1 from countertop 2",
            "clean mug 1 with sinkbasin 1",
            "put mug 1 in/on cabinet 3",
        ],
    )
    apple = key_of(
        "alfworld",
        alf_task("Apple", "Drawer"),
        "workflow",
        "you arrive at countertop",
        [
            "take apple 2 from countertop 1",
            "clean apple 2 with sinkbasin 2",
            "put apple 2 in/on drawer 1",
        ],
    )
    assert mug.key == apple.key
    assert mug.actions[1] == "clean <object> with <tool>"
    # Table 9: a fill and a clean workflow both use the sink basin: different keys.
    fill = key_of(
        "alfworld",
        alf_task("Cup", "Countertop", kind="pick"),
        "workflow",
        "you arrive at sinkbasin",
        ["take cup 1 from sinkbasin 1", "put cup 1 in/on countertop 2"],
        "progress",
    )
    clean = key_of(
        "alfworld",
        alf_task("Cup", "Countertop"),
        "workflow",
        "you arrive at sinkbasin",
        ["clean cup 1 with sinkbasin 1", "put cup 1 in/on countertop 2"],
        "success",
    )
    assert "sinkbasin" in fill.actions[0] and clean.actions[0] == "clean <object> with <tool>"
    assert fill.key != clean.key


def test_alfworld_look_at_real_strings():
    """Strings from two scripted-expert look-at episodes (laptop, pen under the desklamp)."""
    a = adapter_for("alfworld")

    def look_task(obj):
        params = {"object_target": obj, "parent_target": "", "toggle_target": "DeskLamp"}
        payload = {"task_type": "look_at_obj_in_light", "pddl_params": params}
        goal = f"Your task is to: look at {obj.lower()} under the desklamp."
        return Task("t", "alfworld", "test", "d", goal, payload)

    laptop = look_task("Laptop")
    assert a.roles(laptop) == {"object": "laptop", "lamp": "desklamp"}
    assert a.roles(Task("t", "alfworld", "test", "d", laptop.goal, {})) == a.roles(laptop)
    arrive = "You arrive at sidetable 2. On the sidetable 2, you see a desklamp 1, a laptop 1."
    cond = a.abstract_text(a.state_cue(arrive), a.roles(laptop))
    assert cond == "you arrive at sidetable"
    f1 = key_of(
        "alfworld", laptop, "workflow", cond, ["take laptop 1 from sidetable 2", "use desklamp 1"]
    )
    f2 = key_of(
        "alfworld",
        look_task("Pen"),
        "workflow",
        cond,
        ["take pen 1 from sidetable 1", "use desklamp 1"],
    )
    assert f1.actions == ("take <object> from sidetable", "use <lamp>") and f1.key == f2.key
    start = "You are in the middle of a room. Looking quickly around you, you see a cabinet 1."
    assert a.state_cue(start) == "you are in the middle of a room"


def test_pddl_roles_and_merge():
    p = adapter_for("pddl")
    roles = p.roles(pddl_task("(on b1 b3)"))
    assert roles == {"object": "b1", "destination": "b3"}
    one = ["unstack b3 b1", "putdown b3", "pickup b1", "stack b1 b3"]
    two = ["unstack b1 b2", "putdown b1", "pickup b2", "stack b2 b1"]
    f1 = key_of("pddl", pddl_task("(on b1 b3)"), "workflow", "start", one)
    f2 = key_of("pddl", pddl_task("(on b2 b1)"), "workflow", "start", two)
    assert f1.actions == (
        "unstack <destination> <object>",
        "putdown <destination>",
        "pickup <object>",
        "stack <object> <destination>",
    )
    assert f1.key == f2.key
    assert p.abstract_action("pick ball3 roomc left", {}) == "pick ball roomc left"
    assert p.bind_action("stack <object> <destination>", roles, ["pickup b2", "stack b1 b3"]) == (
        "stack b1 b3"
    )
    obs = "Now true: b1 is clear. The arm is holding b3. No longer true: b3 is on b1.\nCurrent: x"
    assert p.state_cue(obs) == "now true: b1 is clear. the arm is holding b3"


def test_scienceworld_roles_and_merge():
    s = adapter_for("scienceworld")
    goal = (
        "Your task is to measure the temperature of unknown substance B, which is located around "
        "the bathroom. First, focus on the thermometer. If the unknown substance B temperature is "
        "above 200.0 degrees celsius, place it in the yellow box. If it is below, place it in the "
        "purple box."
    )
    roles = s.roles(task("scienceworld", goal))
    assert roles == {
        "object": "unknown substance b",
        "tool": "thermometer",
        "destination": "yellow box",
    }
    assert s.abstract_action("move unknown substance b to yellow box", roles) == (
        "move <object> to <destination>"
    )
    lead = key_of(
        "scienceworld",
        task("scienceworld", "Your task is to boil lead. First, focus on the substance."),
        "workflow",
        "this room is called the kitchen",
        ["focus on lead", "move lead to metal pot", "activate stove"],
    )
    water = key_of(
        "scienceworld",
        task("scienceworld", "Your task is to boil water. First, focus on the substance."),
        "workflow",
        "this room is called the kitchen",
        ["focus on water", "move water to metal pot", "activate stove"],
    )
    assert lead.actions[0] == "focus on <object>" and lead.key == water.key


def test_fever_and_hotpotqa_roles_and_merge():
    f = adapter_for("fever_smoke")
    c1 = task("fever_smoke", "Claim: The Glass Orchard is based on a novel.")
    c2 = task("fever_smoke", "Claim: Ostveld Tide is signed to Kestrel Sound.")
    assert f.roles(c2) == {"subject": "Ostveld Tide", "subject2": "Kestrel Sound"}
    k1 = key_of(
        "fever", c1, "workflow", "no page", ["Search[The Glass Orchard]", "Finish[SUPPORTS]"]
    )
    k2 = key_of("fever", c2, "workflow", "no page", ["Search[Ostveld Tide]", "Finish[SUPPORTS]"])
    assert k1.actions == ("Search[<subject>]", "Finish[SUPPORTS]") and k1.key == k2.key
    assert f.bind_action("Search[<subject>]", f.roles(c2), None) == "Search[Ostveld Tide]"
    assert f.bind_action("Search[<bridge>]", f.roles(c2), None) is None
    assert f.state_cue("No page is open yet.") == "no page"
    assert f.state_cue("Ostveld Tide is a Vesmiran electronic music duo.") == "page: ostveld tide"

    h = adapter_for("hotpotqa_distractor")
    q1 = task("hotpotqa", "Question: Who was born first, Liora Benesh or Neve Castellan?")
    q2 = task("hotpotqa", "Question: Who was born first, Dorran Fell or Petra Hollenwyck?")
    acts1 = ["Search[Liora Benesh]", "Search[Neve Castellan]", "Finish[Liora Benesh]"]
    acts2 = ["Search[Dorran Fell]", "Search[Petra Hollenwyck]", "Finish[Dorran Fell]"]
    h1 = key_of("hotpotqa", q1, "workflow", "no page", acts1)
    h2 = key_of("hotpotqa", q2, "workflow", "no page", acts2)
    assert h1.actions == ("Search[<subject>]", "Search[<subject2>]", "Finish[<subject>]")
    assert h1.key == h2.key
    q3 = task(
        "hotpotqa", "Question: Which studio produced the 1994 film starring Petra Hollenwyck?"
    )
    assert h.roles(q3) == {"subject": "Petra Hollenwyck"}
    assert h.abstract_action("Search[The Glass Orchard]", h.roles(q3)) == "Search[<bridge>]"
    assert h.abstract_action("Finish[Greyhollow Pictures]", h.roles(q3)) == "Finish[<answer>]"
    assert abstract(rec("workflow", "no page", ["hello", "Finish[x]"]), {}, h) is None


def test_global_key_ignores_evidence_text_and_sources():
    a = rec("precondition", "c", ["go to <destination>"], "progress", text="one")
    b = rec("precondition", "c", ["go to <destination>"], "progress", text="two")
    b.annotate("x|e1", "+")
    fa, fb = abstract(a, {}, GENERIC), abstract(b, {}, GENERIC)
    assert fa.key == fb.key == global_key("precondition", "c", ("go to <destination>",), "progress")
    assert global_key("failure", "c", ("go to <destination>",), "progress") != fa.key
    assert abstract(rec("case", "c", ["go to cabinet 1", "open cabinet 1"]), {}, GENERIC) is None
    assert abstract(rec("reflection", "c", ["go to cabinet 1"], "fail"), {}, GENERIC) is None


# -- pre-promotion checks ----------------------------------------------------------------------


def form(rtype, condition, actions, outcome):
    return abstract(rec(rtype, condition, actions, outcome), {}, GENERIC)


@pytest.mark.parametrize(
    ("rtype", "condition", "actions", "outcome", "ok"),
    [
        ("workflow", "", ["take <object> from countertop", "go to <destination>"], "success", True),
        ("workflow", "", ["take <object> from countertop"], "success", False),
        ("workflow", "", ["take <object> from countertop", "go to <destination>"], "", False),
        (
            "precondition",
            "you arrive at sinkbasin",
            ["clean <object> with <tool>"],
            "progress",
            True,
        ),
        ("precondition", "", ["clean <object> with <tool>"], "progress", False),
        ("precondition", "holding", ["clean <object>", "go to <tool>"], "progress", False),
        ("repair", "", ["take <object> from drawer", "open drawer"], "progress", True),
        ("repair", "", ["open drawer", "open drawer"], "progress", False),
        ("repair", "take <object> from drawer", ["open drawer"], "progress", True),
        ("failure", "you arrive at drawer", ["take <object> from drawer"], "fail:invalid", True),
        ("failure", "you arrive at drawer", ["take <object> from drawer"], "no_progress", True),
        ("failure", "you arrive at drawer", ["take <object> from drawer"], "success", False),
        ("actionable", "you arrive at drawer", ["open drawer"], "state_change", True),
        ("actionable", "", ["open drawer"], "state_change", False),
        ("actionable", "you arrive at drawer", ["open drawer"], "", False),
    ],
)
def test_structural_check(rtype, condition, actions, outcome, ok):
    assert structural(form(rtype, condition, actions, outcome)) is ok


@pytest.mark.parametrize(
    ("rtype", "condition", "actions", "outcome", "ok"),
    [
        ("workflow", "", ["take <object> from countertop", "go to <destination>"], "success", True),
        ("workflow", "", ["look", "inventory"], "success", False),
        ("workflow", "", ["look", "go to <destination>"], "success", False),
        ("workflow", "", ["Think[plan]", "Search[<subject>]", "Finish[SUPPORTS]"], "success", True),
        ("precondition", "start", ["go to <destination>"], "progress", False),
        (
            "precondition",
            "you arrive at sinkbasin",
            ["clean <object> with <tool>"],
            "progress",
            True,
        ),
        ("actionable", "you arrive at drawer", ["look around"], "state_change", False),
        ("actionable", "you arrive at drawer", ["check valid actions"], "state_change", False),
        ("actionable", "you arrive at drawer", ["open drawer"], "unknown", False),
        ("failure", "", ["inventory"], "no_progress", False),
        ("failure", "", ["take <object> from drawer"], "no_progress", True),
        ("repair", "start", ["open drawer"], "progress", False),
    ],
)
def test_information_check(rtype, condition, actions, outcome, ok):
    assert informative(form(rtype, condition, actions, outcome)) is ok


# -- snapshot rebuild --------------------------------------------------------------------------

MUG = {"object": "mug", "destination": "cabinet", "tool": "sinkbasin"}
APPLE = {"object": "apple", "destination": "drawer", "tool": "sinkbasin"}
CLEAN_MUG = [
    "take mug 1 from countertop 2",
    "clean mug 1 with sinkbasin 1",
    "put mug 1 in/on cabinet 3",
]
CLEAN_APPLE = [
    "take apple 2 from countertop 1",
    "clean apple 2 with sinkbasin 2",
    "put apple 2 in/on drawer 1",
]


def annotated(record, *episodes):
    """``episodes``: (episode id, signs, stall) triples."""
    for episode, signs, stall in episodes:
        for sign in signs:
            record.annotate(episode, sign, stall=stall)
    return record


def stores():
    a0 = RecordStore()
    a1 = RecordStore()
    # Workflow: a0 votes (+, +) -> (2, 0); a1 votes (+, {+,-} -> -, +) -> (2, 1); sum (4, 1).
    a0.add(
        annotated(
            rec("workflow", "you arrive at countertop", CLEAN_MUG, roles=MUG),
            ("a0|e1", "+", False),
            ("a0|e2", "+", False),
        )
    )
    a1.add(
        annotated(
            rec("workflow", "you arrive at countertop", CLEAN_APPLE, roles=APPLE),
            ("a1|e1", "+", False),
            ("a1|e2", "+-", False),
            ("a1|e3", "+", False),
        )
    )
    # Precondition: one supporting episode -> (1, 0): W = 0.2699 < 0.35, rho+ = 1.
    a0.add(
        annotated(
            rec(
                "precondition",
                "you arrive at sinkbasin",
                ["clean mug 1 with sinkbasin 1"],
                "progress",
                roles=MUG,
            ),
            ("a0|e1", "+", False),
        )
    )
    # Failure (anti-pattern): three episodes, each a contradiction with a stall -> (3, 0), n0 = 3.
    a1.add(
        annotated(
            rec(
                "failure",
                "you arrive at drawer",
                ["take apple 2 from drawer 1"],
                "fail:invalid_action",
                roles=APPLE,
            ),
            ("a1|e1", "-", True),
            ("a1|e2", "-", True),
            ("a1|e3", "--", True),
        )
    )
    # Low information (only "look"), incomplete (one-action workflow), and a local case.
    a0.add(
        annotated(
            rec("actionable", "you arrive at countertop", ["look"], "state_change", roles=MUG),
            *[(f"a0|e{i}", "+", False) for i in range(5)],
        )
    )
    a1.add(
        annotated(
            rec("workflow", "start", ["go to drawer 1"], "progress", roles=APPLE),
            *[(f"a1|e{i}", "+", False) for i in range(5)],
        )
    )
    a1.add(annotated(rec("case", "start", CLEAN_APPLE, roles=APPLE), ("a1|e1", "+", False)))
    return {"a0": a0, "a1": a1}


def wf_key():
    return global_key(
        "workflow",
        "you arrive at countertop",
        (
            "take <object> from countertop",
            "clean <object> with <tool>",
            "put <object> in/on <destination>",
        ),
        "success",
    )


# The failure's drawer is the apple task's destination: it becomes a role in the key.
FAIL_KEY = global_key(
    "failure",
    "you arrive at <destination>",
    ("take <object> from <destination>",),
    "fail:invalid_action",
)


def test_rebuild_hand_computed():
    snap = rebuild(stores(), adapter=adapter_for("alfworld"))
    assert snap.diagnostics == {
        "shareable": 6,
        "kept_local": 0,
        "candidates": 5,
        "failed_structure": 1,
        "failed_information": 1,
        "failed_threshold": 1,
        "promoted": 2,
    }
    wf = snap.records[wf_key()]
    assert (wf.n_pos, wf.n_neg, wf.n_stall) == (4, 1, 0)
    assert (wf.c_pos, wf.c_neg) == (5, 1)  # occurrences: 2 + 3 support, 1 contradiction
    assert round(wf.score, 4) == 0.4353 and wf.rho == 0.8
    assert wf.sources == ["a0", "a1"]
    fail = snap.records[FAIL_KEY]
    assert (fail.n_pos, fail.n_neg, fail.n_stall) == (3, 0, 3)
    assert round(fail.score, 4) == 0.5258 and fail.sources == ["a1"]
    assert GlobalSnapshot.from_dict(snap.to_dict()).to_dict() == snap.to_dict()


def test_rebuild_order_invariance():
    base = rebuild(stores(), adapter=adapter_for("alfworld")).to_dict()
    flipped = {}
    for agent, store in reversed(list(stores().items())):
        again = RecordStore()
        for record in reversed(list(store)):
            again.add(record)
        flipped[agent] = again
    assert rebuild(flipped, adapter=adapter_for("alfworld")).to_dict() == base


def test_stale_records_disappear():
    local = stores()
    failure = next(r for r in local["a1"] if r.type == "failure")
    del local["a1"].records[failure.key]
    apple_wf = next(r for r in local["a1"] if r.type == "workflow" and len(r.actions) == 3)
    del local["a1"].records[apple_wf.key]
    snap = rebuild(local, adapter=adapter_for("alfworld"))
    assert FAIL_KEY not in snap
    wf = snap.records[wf_key()]  # recomputed from a0 alone: (2, 0), W = 0.4250
    assert (wf.n_pos, wf.n_neg, round(wf.score, 4), wf.sources) == (2, 0, 0.4250, ["a0"])


def test_empirical_rule_promotes_more_on_sparse_evidence():
    wilson = rebuild(stores(), adapter=adapter_for("alfworld"), rule="wilson")
    empirical = rebuild(stores(), adapter=adapter_for("alfworld"), rule="empirical")
    assert len(wilson) == 2 and len(empirical) == 3  # the (1, 0) precondition: rho+ = 1
    assert set(wilson.records) < set(empirical.records)


def test_threshold_sweep_is_monotone():
    sizes = [
        len(rebuild(stores(), adapter=adapter_for("alfworld"), threshold=t / 100))
        for t in range(25, 51, 5)
    ]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] == 3 and sizes[-1] == 1  # W(1,0) = 0.2699 >= 0.25; only W(3,0) >= 0.50
