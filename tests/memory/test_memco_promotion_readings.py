"""MemCo's promotion under the paper's reading and under its released code's (issue 48 item 2).

The released code (SYannL/nvdamas, memco_backend/promotion.py and its tests) differs from the
paper in two places, each one key away (``method.promotion_types``,
``method.anti_pattern_counting``; records.py maps the code's candidate types onto memarena's
records):

- its structure check accepts a failure candidate only as an anti-pattern (a stall): a failure
  record with a ``fail:<label>`` outcome stays local; repair records, its repair candidates'
  counterpart, are promoted under both readings;
- an anti-pattern's episode votes ``+`` only when it holds a stall, ``-`` otherwise.

The Wilson threshold agrees (0.35 in the paper and the released runs); its unit test's cases
(W(2,0) = 0.4250 rejected and W(3,0) = 0.5258 promoted) hold at GlobalPromoter's own default, 0.5.
"""

from __future__ import annotations

import itertools

import pytest

from memarena.memory.memco import MemCo
from memarena.memory.memco.base import Feedback, Transition
from memarena.memory.memco.global_memory import rebuild, rebuild_reference
from memarena.memory.memco.induction import induce
from memarena.memory.memco.method import LocalMemory
from memarena.memory.memco.records import Record, RecordStore, reduce_episode
from memarena.memory.memco.roles import GENERIC

READINGS = list(itertools.product(("paper", "released"), ("paper", "released")))
GO, TAKE, OPEN = "go to drawer 1", "take apple 2 from drawer 1", "open drawer 1"


def both(stores: dict[str, RecordStore], **kw) -> dict:
    """The rebuilt snapshot as a dict; the fast path and the reference must agree."""
    fast = rebuild(stores, adapter=GENERIC, **kw).to_dict()
    assert fast == rebuild_reference(stores, adapter=GENERIC, **kw).to_dict()
    return fast


def promoted(snap: dict, rtype: str, outcome: str) -> list[dict]:
    return [r for r in snap["records"] if r["type"] == rtype and r["outcome"] == outcome]


def precondition(episodes: int) -> dict[str, RecordStore]:
    """A precondition supported once in each of ``episodes`` episodes: (n, 0)."""
    record = Record("precondition", "you arrive at sinkbasin", ("clean mug 1 with sinkbasin 1",),
                    "progress")  # fmt: skip
    for i in range(episodes):
        record.annotate(f"a0|e{i}", "+")
    store = RecordStore()
    store.add(record)
    return {"a0": store}


def tr(t: int, action: str, changed: bool = False, label: str | None = None, delta: float = 0.0):
    return Transition(t, f"state {t}", action, Feedback(True, changed, label, delta), f"s{t + 1}")


def induced(step, episodes: int = 3) -> dict[str, RecordStore]:
    """``episodes`` failed episodes: go to the drawer, then ``step`` (a take that does not
    progress), then open the drawer, which progresses (it repairs the take)."""
    store = RecordStore()
    for i in range(episodes):
        steps = [tr(0, GO, changed=True), step, tr(2, OPEN, changed=True, delta=0.5)]
        induce(steps, False, "put some apple in fridge", store, f"e{i}", "a0")
    return {"a0": store}


# -- the Wilson threshold: the released unit test's cases -------------------------------------


@pytest.mark.parametrize(("types", "counting"), READINGS)
def test_released_unit_test_cases_hold_at_its_class_default_threshold(types, counting):
    keys = {"promotion_types": types, "anti_pattern_counting": counting}
    at_half = [len(both(precondition(n), threshold=0.5, **keys)["records"]) for n in (2, 3)]
    assert at_half == [0, 1]  # W(2,0) = 0.4250 < 0.5 <= W(3,0) = 0.5258
    at_runs = [len(both(precondition(n), threshold=0.35, **keys)["records"]) for n in (1, 2)]
    assert at_runs == [0, 1]  # the released runs' 0.35: W(1,0) = 0.2699 < 0.35 <= W(2,0)


def test_the_threshold_key_names_its_readings():
    field = MemCo.Settings.__dataclass_fields__["threshold"]
    assert field.default == 0.35
    assert field.metadata["readings"] == {"paper": 0.35, "released": 0.35}
    for key in ("promotion_types", "anti_pattern_counting"):
        field = MemCo.Settings.__dataclass_fields__[key]
        assert field.default == "paper"
        assert field.metadata["readings"] == {"paper": "paper", "released": "released"}


# -- which failure records may be promoted -----------------------------------------------------


@pytest.mark.parametrize("counting", ["paper", "released"])
def test_an_explicit_failure_is_promoted_only_under_the_papers_reading(counting):
    """A take that fails with a label (and stalls) in three episodes: ``fail:invalid_action``,
    (3, 0). The released structure check rejects it, as its raw failure candidate."""
    stores = induced(tr(1, TAKE, label="invalid_action"))
    paper = both(stores, promotion_types="paper", anti_pattern_counting=counting)
    (failure,) = promoted(paper, "failure", "fail:invalid_action")
    assert (failure["n_pos"], failure["n_neg"], failure["n_stall"]) == (3, 0, 3)
    released = both(stores, promotion_types="released", anti_pattern_counting=counting)
    assert promoted(released, "failure", "fail:invalid_action") == []
    diag, paper_diag = released["diagnostics"], paper["diagnostics"]
    assert diag["failed_structure"] == paper_diag["failed_structure"] + 1
    assert diag["promoted"] == paper_diag["promoted"] - 1  # nothing else changes


@pytest.mark.parametrize(("types", "counting"), READINGS)
def test_an_anti_pattern_is_promoted_under_both_readings(types, counting):
    """A take that stalls without a failure label: ``no_progress``, the released anti-pattern."""
    snap = both(induced(tr(1, TAKE)), promotion_types=types, anti_pattern_counting=counting)
    (failure,) = promoted(snap, "failure", "no_progress")
    assert (failure["n_pos"], failure["n_neg"], failure["n_stall"]) == (3, 0, 3)


@pytest.mark.parametrize(("types", "counting"), READINGS)
def test_a_repair_is_promoted_under_both_readings(types, counting):
    """``open`` after the failed ``take``: memarena's repair record is the released repair
    candidate, which its code promotes (only its REPAIR / BLOCKED rules, a layer memarena does
    not have, are never promoted)."""
    snap = both(induced(tr(1, TAKE, label="invalid_action")), promotion_types=types,
                anti_pattern_counting=counting)  # fmt: skip
    (repair,) = promoted(snap, "repair", "progress")
    assert repair["condition"] == "take apple from drawer"
    assert repair["actions"] == ["open drawer"] and (repair["n_pos"], repair["n_neg"]) == (3, 0)


# -- how an anti-pattern's episodes vote -------------------------------------------------------


def test_episode_reduction_under_both_readings():
    anti = {  # annotations: (paper, released)
        "+": ("+", "-"),  # a failure seen without a stall
        "+0": ("+", "+"),
        "-": ("-", "-"),
        "-0": ("+", "+"),
        "+-": ("+", "-"),
        "+-0": ("+", "+"),
    }
    for marks, votes in anti.items():
        got = tuple(reduce_episode(set(marks), True, c) for c in ("paper", "released"))
        assert got == votes, marks
    for marks in ("+", "+0", "-", "-0", "+-", "+-0"):  # ordinary relations: the same vote
        votes = {reduce_episode(set(marks), False, c) for c in ("paper", "released")}
        assert votes == {"-" if "-" in marks else "+"}, marks
    assert reduce_episode(set(), True, "released") is None


def test_a_failure_seen_without_a_stall_contradicts_under_the_released_counting():
    """The take fails with a label but changes the state (no stall marker): each episode's
    ledger is {+}. The paper's reduction counts it as support, the released one as a
    contradiction."""
    stores = induced(tr(1, TAKE, changed=True, label="invalid_action"))
    (record,) = stores["a0"].of_type("failure")
    assert set(map(frozenset, record.ledger.values())) == {frozenset("+")}
    assert record.promotion_counts("paper") == (3, 0, 0)
    assert record.promotion_counts("released") == (0, 3, 0)
    paper = both(stores, anti_pattern_counting="paper")
    assert len(promoted(paper, "failure", "fail:invalid_action")) == 1
    assert promoted(both(stores, anti_pattern_counting="released"), "failure",
                    "fail:invalid_action") == []  # fmt: skip


# -- the method's keys reach the rebuild -------------------------------------------------------


def test_the_methods_keys_reach_its_rebuild():
    stores = {
        **induced(tr(1, TAKE, label="invalid_action")),
        "a1": induced(tr(1, TAKE, changed=True, label="bad_take"))["a0"],
    }
    got = {}
    for types, counting in READINGS:
        memory = MemCo(env_name="alfworld", promotion_types=types, anti_pattern_counting=counting)
        for agent, store in stores.items():
            memory.locals[agent] = LocalMemory()
            memory.locals[agent].store = store
        snap = memory.rebuild_global().to_dict()
        assert (snap["promotion_types"], snap["anti_pattern_counting"]) == (types, counting)
        failures = [r["outcome"] for r in snap["records"] if r["type"] == "failure"]
        got[types, counting] = sorted(failures)
    assert got == {
        ("paper", "paper"): ["fail:bad_take", "fail:invalid_action"],
        ("paper", "released"): ["fail:invalid_action"],  # bad_take never stalled
        ("released", "paper"): [],
        ("released", "released"): [],
    }
