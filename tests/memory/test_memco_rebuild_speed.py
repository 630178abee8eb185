"""MemCo's fast global rebuild equals the direct computation (issue 23 part 3).

:func:`rebuild` abstracts each record once per distinct roles, relation-only through caches
that persist across rebuilds, and display texts only for promoted keys; :func:`rebuild_reference`
abstracts every occurrence straight from the adapter. On synthetic ALFWorld-like episodes (the
generator of benchmarks/memco_memory.py) both give the same snapshot: records, keys, scores,
sources, texts and diagnostics, also after more episodes arrive and after a state-dict round trip.
"""

from __future__ import annotations

import copy
import random
import re
import sys

import pytest

from conftest import ROOT
from memarena.memory.memco import MemCo
from memarena.memory.memco.abstraction import global_key
from memarena.memory.memco.global_memory import rebuild, rebuild_reference
from memarena.memory.memco.records import relation_signature
from memarena.memory.memco.roles import ADAPTERS, GENERIC, _norm

sys.path.insert(0, str(ROOT / "benchmarks"))
from memco_memory import episode  # noqa: E402


def _memory(n: int, seed: int = 0, env: str = "alfworld") -> tuple[MemCo, random.Random]:
    rng = random.Random(seed)
    memory = MemCo(env_name=env)
    for i in range(n):
        memory.observe(*episode(rng, i))
    return memory, rng


def _stores(memory: MemCo) -> dict:
    return {agent: local.store for agent, local in sorted(memory.locals.items())}


def _both(memory: MemCo, **kw) -> tuple[dict, dict]:
    stores = _stores(memory)
    fast = rebuild(stores, adapter=memory.adapter, **kw).to_dict()
    ref = rebuild_reference(stores, adapter=memory.adapter, **kw).to_dict()
    return fast, ref


def test_fast_rebuild_equals_reference_and_stays_equal_as_episodes_arrive():
    memory, rng = _memory(300)
    fast, ref = _both(memory)
    assert fast == ref
    assert ref["diagnostics"]["promoted"] > 50  # the comparison covers real promotions
    assert ref["diagnostics"]["failed_information"] + ref["diagnostics"]["kept_local"] > 0
    assert {r["text"] for r in ref["records"]} != {""}
    # incremental: more episodes into the same stores (warm caches), then again
    for i in range(300, 400):
        memory.observe(*episode(rng, i))
    fast2, ref2 = _both(memory)
    assert fast2 == ref2 and fast2 != fast
    # the method's own rebuild is the fast path
    assert memory.rebuild_global().to_dict() == ref2


@pytest.mark.parametrize(
    "kw",
    [
        {"threshold": 0.2},
        {"rule": "empirical", "threshold": 0.6},
        {"alpha": 0.1},
        {"promotion_types": "released"},
        {"anti_pattern_counting": "released"},
        {"promotion_types": "released", "anti_pattern_counting": "released", "threshold": 0.5},
    ],
)
def test_fast_rebuild_equals_reference_under_other_promotion_settings(kw):
    memory, _ = _memory(150, seed=1)
    fast, ref = _both(memory, **kw)
    assert fast == ref


def test_fast_rebuild_equals_reference_after_load_state_dict():
    memory, _ = _memory(200, seed=2)
    state = copy.deepcopy(memory.state_dict())
    fresh = MemCo(env_name="alfworld")
    fresh.load_state_dict(state)
    fast, ref = _both(fresh)
    assert fast == ref == memory.global_memory.to_dict()


def test_fast_rebuild_equals_reference_without_occurrence_logs():
    """Stores without a log: every record abstracted under its own stored roles."""
    memory, _ = _memory(150, seed=3)
    stores = _stores(memory)
    for store in stores.values():
        store.occurrences = None
    fast = rebuild(stores, adapter=memory.adapter).to_dict()
    assert fast == rebuild_reference(stores, adapter=memory.adapter).to_dict()
    assert fast["diagnostics"]["promoted"] > 0


def _abstract_text_before(adapter, text: str, roles: dict[str, str]) -> str:
    """roles.py's abstract_text / strip_ids / _norm before the optimisation, verbatim."""

    def norm(t: str) -> str:
        return re.sub(r"\s+", " ", str(t).strip().lower()).strip(" .")

    out = norm(text)
    for role, entity in sorted(roles.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if entity:
            pattern = rf"(?<![\w<]){re.escape(norm(entity))}{adapter.id_suffix}(?![\w>])"
            out = re.sub(pattern, f"<{role}>", out)
    if adapter.env == "pddl":
        return re.sub(r"(?<![<\w])([a-z][a-z\-]*?)\d+\b", r"\1", out)
    return re.sub(r"\b([a-z][a-z\-]*) \d+\b", r"\1", out)


TEXTS = [
    "Take Apple 1 from CounterTop 2.",
    "go to sinkbasin 1\tthen  heat apple 12 with microwave 1 ",
    "pick-up ball3 room12 left  gripper1",
    "  .Look at\u00a0the desklamp 1\u2028under lamp 3..",
    "put a.b 1 in c+d 2; a.b 10",
    "<object> 1 and object 2 and objects 3",
    "",
]
ROLES = [
    {},
    {"object": "apple", "destination": "countertop", "tool": "microwave"},
    {"object": "ball3", "destination": "room12"},
    {"object": "a.b", "destination": "c+d", "lamp": "Desk Lamp", "x": " . "},
    {"object": "object", "container": "apple 1"},
]


@pytest.mark.parametrize("adapter", [GENERIC, ADAPTERS["alfworld"], ADAPTERS["pddl"]])
def test_abstract_text_equals_the_regex_implementation(adapter):
    for text in TEXTS:
        for roles in ROLES:
            assert adapter.abstract_text(text, roles) == _abstract_text_before(adapter, text, roles)
    for text in TEXTS + ["a\x1c\x1db\x85c\u3000d"]:
        assert _norm(text) == re.sub(r"\s+", " ", text.strip().lower()).strip(" .")


def test_global_key_equals_relation_signature():
    cases = [
        ("workflow", "after go to <object>", ("go to x", "take <object> from y"), "success"),
        ("failure", "", (), ""),
        ("repair", 'é\u2028"\\\n\t', ("ü😀\x00\x1f", "\u00a0", ""), "x\x7f"),
    ]
    for case in cases:
        assert global_key(*case) == relation_signature(*case)
