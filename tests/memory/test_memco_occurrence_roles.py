"""MemCo abstracts every occurrence under its own episode's task roles (paper Table 8's caption,
Appendix B.3.1 / B.3.3, Eq. 3), so the global memory does not depend on the order in which
episodes are observed.

Two ALFWorld tasks of one agent share the first step, ``go to countertop 1`` from the middle of
the room (a single local ``actionable`` record). For the mug task (destination cabinet) the
countertop is only a place: ``go to countertop``; for the apple task (destination countertop) it
is the task's destination: ``go to <destination>``. Two episodes of each task give each abstract
form ``n+ = 2`` (W = 0.4250 >= 0.35): both are promoted whatever the order.
"""

from __future__ import annotations

import json

import pytest

from memarena.core import ConfigError
from memarena.core.types import Feedback, Outcome, Step, Task, Trajectory
from memarena.memory.memco import MemCo
from memarena.memory.memco.abstraction import global_key
from memarena.memory.memco.global_memory import abstract_occurrences
from memarena.memory.memco.induction import OccurrenceLog, occurrence_log, restrict
from memarena.memory.memco.records import SHAREABLE_TYPES
from memarena.memory.memco.roles import adapter_for

START = "You are in the middle of a room. Looking quickly around you, you see a cabinet 1."
MUG = ("Mug", "Cabinet", "cabinet 2")
APPLE = ("Apple", "CounterTop", "countertop 1")


def task(spec: tuple[str, str, str], i: int) -> Task:
    obj, dest, _ = spec
    params = {"object_target": obj, "parent_target": dest, "mrecep_target": "", "toggle_target": ""}
    payload = {"task_type": "pick_clean_then_place_in_recep", "pddl_params": params}
    goal = f"Your task is to: put a clean {obj.lower()} in {dest.lower()}."
    return Task(f"alfworld/kitchen/train/{obj}{i}", "alfworld", "train", "kitchen", goal, payload)


def episode(spec: tuple[str, str, str], i: int) -> tuple[Trajectory, Outcome]:
    """Go to countertop 1, take the object, clean it at the sink basin, put it away."""
    obj, place = spec[0].lower(), spec[2]
    ok = Feedback(True, True, None)
    moves = [
        ("go to countertop 1", f"You arrive at countertop 1. On it you see a {obj} 1.", 0.0),
        (f"take {obj} 1 from countertop 1", f"You pick up the {obj} 1 from countertop 1.", 0.25),
        ("go to sinkbasin 1", "You arrive at sinkbasin 1.", 0.25),
        (f"clean {obj} 1 with sinkbasin 1", f"You clean the {obj} 1 using the sinkbasin 1.", 0.5),
        (f"go to {place}", f"You arrive at {place}.", 0.5),
        (f"move {obj} 1 to {place}", f"You move the {obj} 1 to the {place}.", 1.0),
    ]
    steps = [Step(a, o, 0.0, p, ok) for a, o, p in moves]
    return Trajectory(task(spec, i), START, steps), Outcome(True, 1.0, len(steps), "success")


EPISODES = [episode(MUG, 0), episode(MUG, 1), episode(APPLE, 0), episode(APPLE, 1)]
ROOM = "you are in the middle of a room"


def observed(order: list[int]) -> MemCo:
    memory = MemCo(env_name="alfworld")
    for i in order:
        memory.observe(*EPISODES[i])
    memory.rebuild_global()
    return memory


def dump(memory: MemCo) -> str:
    return json.dumps(memory.global_memory.to_dict(), sort_keys=True)


def test_global_memory_does_not_depend_on_the_observation_order():
    mug_first, apple_first = observed([0, 1, 2, 3]), observed([3, 2, 1, 0])
    assert dump(mug_first) == dump(apple_first)
    assert dump(observed([2, 0, 3, 1])) == dump(mug_first)


def test_each_occurrence_is_abstracted_with_its_own_episode_roles():
    memory = observed([0, 1, 2, 3])
    (shared,) = [
        r
        for r in memory.locals["kitchen"].store
        if r.actions == ("go to countertop 1",) and r.condition == ROOM
    ]
    assert len(shared.ledger) == 4  # one local record, seen in all four episodes
    place = global_key("actionable", ROOM, ("go to countertop",), "state_change")
    role = global_key("actionable", ROOM, ("go to <destination>",), "state_change")
    got = {k: memory.global_memory.records[k] for k in (place, role)}
    # the mug episodes (countertop is a place) and the apple episodes (countertop is the
    # destination) each give their own abstract form n+ = 2, from the same agent
    assert {k: (g.n_pos, g.n_neg, g.c_pos, g.sources) for k, g in got.items()} == {
        place: (2, 0, 2, ["kitchen"]),
        role: (2, 0, 2, ["kitchen"]),
    }
    # the local record keeps the roles all of its episodes agree on (order-independent)
    assert shared.extra["roles"] == {"tool": "sinkbasin"}
    assert observed([3, 2, 1, 0]).locals["kitchen"].store.records[shared.key].extra == shared.extra


def evidence(record) -> tuple:
    return record.c_pos, record.c_neg, record.c_stall, record.ledger


def test_a_record_splits_into_the_parts_its_episodes_contribute():
    memory = observed([2, 0, 3, 1])
    store = memory.locals["kitchen"].store
    log = occurrence_log(store)
    for record in store.of_type(*SHAREABLE_TYPES):  # all its episodes: the record itself
        assert evidence(restrict(record, log, set(record.ledger))) == evidence(record)
    (shared,) = [r for r in store if r.actions == ("go to countertop 1",) and r.condition == ROOM]
    parts = abstract_occurrences(shared, log, adapter_for("alfworld"))
    key = "kitchen|alfworld/kitchen/train/{}".format
    assert {form.actions: sorted(part.ledger) for form, part in parts} == {
        ("go to countertop",): [key("Mug0"), key("Mug1")],
        ("go to <destination>",): [key("Apple0"), key("Apple1")],
    }
    assert sum(part.c_pos for _, part in parts) == shared.c_pos == 4


def test_snapshot_round_trip_keeps_the_episode_roles(tmp_path):
    memory = observed([0, 1, 2, 3])
    memory.save(tmp_path)
    again = MemCo(env_name="alfworld")
    again.load(tmp_path)
    assert dump(again) == dump(memory)
    assert again.state_dict() == json.loads(json.dumps(memory.state_dict()))
    log = again.locals["kitchen"].to_dict()["occurrences"]
    assert log["roles"]["kitchen|alfworld/kitchen/train/Apple0"]["destination"] == "countertop"
    # resuming on the reloaded snapshot: the same memory as observing everything at once
    resumed = MemCo(env_name="alfworld")
    resumed.load_state_dict(observed([2, 0]).state_dict())
    for i in (3, 1):
        resumed.observe(*EPISODES[i])
    resumed.rebuild_global()
    assert dump(resumed) == dump(memory)


def test_a_log_without_episode_roles_is_named():
    old = {"episodes": ["kitchen|e1"], "stems": {}}  # a schema v1 occurrence log
    with pytest.raises(ValueError, match="re-run acquisition"):
        OccurrenceLog.from_dict(old)
    state = observed([0]).state_dict()
    del state["agents"]["kitchen"]["occurrences"]["roles"]
    with pytest.raises(ConfigError, match="schema v2"):
        MemCo(env_name="alfworld").load_state_dict(state)
