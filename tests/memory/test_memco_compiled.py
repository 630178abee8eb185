"""MemCo's compiled retrieval (compiled.py) and indexed anchor look-up (graph.StateIndex) give
the reference path's selections, field for field.

The reference is the entry-by-entry code of retrieval.py (``MemCo._select(q, reference=True)``)
and, for the local graph, the node-by-node anchor loop below (the implementation before the
index). The corpora cover what the fast path decides differently: ALFWorld-like episodes with
failures, stalls and detours (benchmarks/memco_memory.py's generator: plans with a done prefix,
repairs, reflections, role-bound global records under several roles), the same with ``key=value``
state cues (the fact mode of ``s_state``), and FEVER-like episodes without an action list
(free-text binding, the wiki adapter's own ``bind_action``).
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from conftest import ROOT
from memarena.core.types import Feedback, MemoryQuery, Observation, Outcome, Step, Task, Trajectory
from memarena.memory.memco import MemCo
from memarena.memory.memco.compiled import ROLES_CACHE, GlobalPools
from memarena.memory.memco.graph import DELTA, jaccard, tokens
from memarena.memory.memco.induction import normalize

sys.path.insert(0, str(ROOT / "benchmarks"))
from memco_memory import episode as alfworld_episode  # noqa: E402


def selection(entries) -> list[tuple]:
    return [
        (e.id, e.kind, e.rank, tuple(sorted(e.facets.items())), e.bound_actions,
         e.extra.get("next_action"), e.extra.get("steps"), e.extra.get("relevance"))
        for e in entries
    ]  # fmt: skip


def queries(episodes: list[tuple[Trajectory, Outcome]], rng: random.Random, free: bool = False):
    """Per episode a query at a random step (0 included), the admissible actions being the
    episode's actions plus two that no record holds (None for a free-text env)."""
    for traj, _ in episodes:
        k = rng.randrange(len(traj.steps) + 1)
        obs = traj.steps[k - 1].observation if k else traj.initial_observation
        actions = None if free else sorted({s.action for s in traj.steps} | {"look", "inventory"})
        yield MemoryQuery(traj.task, Observation(obs, traj.task.goal, actions), k, traj.steps[:k])


def assert_same_selections(memory: MemCo, qs: list[MemoryQuery]) -> dict[str, int]:
    seen = {"local": 0, "global": 0, "queries": 0}
    for view in memory.eval_views():
        memory.set_view(view)
        for mq in qs:
            fast, ref = memory._select(mq), memory._select(mq, reference=True)
            assert (fast is None) == (ref is None)
            if fast is None:
                continue
            assert fast[0] == ref[0]
            assert selection(fast[1].local) == selection(ref[1].local), (view, fast[0])
            assert selection(fast[1].global_) == selection(ref[1].global_), (view, fast[0])
            seen["local"] += len(fast[1].local)
            seen["global"] += len(fast[1].global_)
            seen["queries"] += 1
    return seen


def acquired(env: str, episodes, freeze: bool = True) -> MemCo:
    memory = MemCo(env_name=env)
    for traj, out in episodes:
        memory.observe(traj, out)
    if freeze:
        memory.freeze()
    return memory


def test_alfworld_like_pool_gives_the_reference_selections():
    rng = random.Random(7)
    episodes = [alfworld_episode(rng, i) for i in range(240)]
    memory = acquired("alfworld", episodes)
    seen = assert_same_selections(memory, list(queries(episodes[:60], rng)))
    assert seen["queries"] == 4 * 60 and seen["local"] > 900 and seen["global"] > 900
    # the grounded global pools (of the last view's agent, its own-only records excluded): one
    # per roles assignment seen, at most ROLES_CACHE kept
    pools = memory._compiled_globals(memory.eval_views()[-1])
    assert 1 < len(pools.cache) <= ROLES_CACHE


@pytest.mark.parametrize(
    "kwargs",
    [
        {"unavailable_next_local": "hide", "unavailable_next_global": "drop"},
        {"unavailable_next_local": "drop", "unavailable_next_global": "drop",
         "global_exclude_owner": False},
    ],
    ids=["paper_reading", "drop_both_owner_kept"],
)  # fmt: skip
def test_unavailable_next_settings_give_the_reference_selections(kwargs):
    """The other readings of B.4.4 (a plan whose next step is unavailable: dropped or kept
    with its next step discarded, per source) and the owner's own global records kept."""
    rng = random.Random(11)
    episodes = [alfworld_episode(rng, i) for i in range(120)]
    memory = MemCo(env_name="alfworld", **kwargs)
    for traj, out in episodes:
        memory.observe(traj, out)
    memory.freeze()
    seen = assert_same_selections(memory, list(queries(episodes[:25], rng)))
    assert seen["local"] > 200 and seen["global"] > 200


def kv_episode(rng: random.Random, i: int) -> tuple[Trajectory, Outcome]:
    """An ALFWorld-like episode whose observations are ``key=value`` facts."""
    traj, out = alfworld_episode(rng, i)
    places = ["countertop", "sinkbasin", "cabinet", "fridge"]

    def kv(text: str) -> str:
        held = rng.choice(["nothing", "mug", "apple,mug"])
        return f"loc={rng.choice(places)}; holding={held}; door={rng.choice(['open', 'closed'])}"

    steps = [Step(s.action, kv(s.observation), s.reward, s.progress, s.feedback)
             for s in traj.steps]  # fmt: skip
    return Trajectory(traj.task, kv("start"), steps), out


def test_key_value_state_cues_give_the_reference_selections():
    rng = random.Random(3)
    episodes = [kv_episode(rng, i) for i in range(160)]
    memory = acquired("alfworld", episodes)
    # the fact mode is in play: a cue with facts and records whose condition holds facts
    assert any("=" in r.condition for local in memory.locals.values() for r in local.store)
    seen = assert_same_selections(memory, list(queries(episodes[:40], rng)))
    assert seen["local"] > 0


ENTITIES = ["Barack Obama", "Paris", "The Beatles", "Mount Everest", "Marie Curie", "Nile"]


def wiki_episode(rng: random.Random, i: int) -> tuple[Trajectory, Outcome]:
    subject, other = rng.sample(ENTITIES, 2)
    domain = rng.choice(["people", "places"])  # two agents: records can be promoted
    goal = f"Claim: {subject} is in {other}."
    task = Task(f"fever/dev/{i:05d}", "fever", "dev", domain, goal, {})
    steps, progress = [], 0.0
    for action in (f"Search[{subject}]", f"Lookup[{rng.choice(['born', 'river', 'band'])}]",
                   f"Search[{other}]", rng.choice(["Finish[SUPPORTS]", "Finish[REFUTES]"])):
        ok = rng.random() < 0.7
        fb = Feedback(True, ok, None if ok else "no_effect")
        progress = min(1.0, progress + (0.25 if ok else 0.0))
        obs = f"{subject} was a page." if ok else "Could not find that page."
        steps.append(Step(action, obs, 0.0, progress, fb))
    success = rng.random() < 0.6
    traj = Trajectory(task, "No page is open.", steps)
    return traj, Outcome(success, 1.0 if success else progress, len(steps), "done")


@pytest.mark.parametrize("free", [True, False], ids=["free_text", "action_list"])
def test_wiki_pool_with_its_own_binding_gives_the_reference_selections(free):
    rng = random.Random(11)
    episodes = [wiki_episode(rng, i) for i in range(120)]
    memory = acquired("fever", episodes)
    assert memory.global_memory.records, "the wiki corpus should promote global records"
    seen = assert_same_selections(memory, list(queries(episodes[:40], rng, free=free)))
    assert seen["local"] > 0 and seen["global"] > 0


def test_grounded_global_pools_are_kept_per_roles_assignment():
    rng = random.Random(5)
    memory = acquired("alfworld", [alfworld_episode(rng, i) for i in range(60)])
    pools = GlobalPools(list(memory._compiled_globals().entries), memory._vocabs, memory.adapter)
    first = pools.for_roles({"object": "mug"})
    assert pools.for_roles({"object": "mug"}) is first
    for i in range(ROLES_CACHE):
        pools.for_roles({"object": f"thing{i}"})
    assert len(pools.cache) == ROLES_CACHE and pools.for_roles({"object": "mug"}) is not first


# ---------------------------------------------------------------------------- anchors


def reference_anchors(local, state_cue: str, k: int) -> list[dict[str, Any]]:
    """The node-by-node anchor look-up (exact match first, then token Jaccard >= threshold)."""
    graph = local.graph
    query, query_tokens = normalize(state_cue), tokens(state_cue)
    found = []
    for key, data in graph.graph.nodes(data=True):
        if data["type"] != "state":
            continue
        exact = data["content"] == query
        sim = 1.0 if exact else jaccard(query_tokens, tokens(data["content"]))
        if exact or sim >= graph.similarity_threshold:
            found.append((not exact, -sim, -data["visits"], data["content"], key, sim))
    found.sort()
    return [{"node": key, "state": content, "similarity": sim, "visits": -v}
            for _, _, v, content, key, sim in found[:k]]  # fmt: skip


def reference_neighborhood(local, state_cue: str, limit: int, k: int) -> list[dict[str, Any]]:
    """Every state-delta edge leaving the anchors, sorted, the first ``limit``."""
    graph = local.graph.graph
    entries = []
    for anchor in reference_anchors(local, state_cue, k):
        for _, target, relation, data in graph.out_edges(anchor["node"], keys=True, data=True):
            if relation.startswith(f"{DELTA}:"):
                entries.append({
                    "state": anchor["state"], "action": data["payload"]["action"],
                    "next_state": graph.nodes[target]["content"], "count": data["count"],
                    "progressed": data["progressed"], "stalled": data["stalled"],
                    "labels": dict(data["labels"]), "success": data["success"],
                    "similarity": anchor["similarity"],
                })  # fmt: skip
    entries.sort(key=lambda e: (-e["similarity"], -e["progressed"] / max(e["count"], 1),
                                -e["count"], e["state"], e["action"], e["next_state"]))
    return entries[:limit]


def test_indexed_anchors_and_neighborhoods_match_the_node_scan():
    rng = random.Random(2)
    episodes = [alfworld_episode(rng, i) for i in range(200)]
    memory = acquired("alfworld", episodes, freeze=False)
    cues = {memory.adapter.state_cue(s.observation) for t, _ in episodes[:80] for s in t.steps}
    cues |= {"nothing happens", "", "you take the obj1 1 at recep3 1"}
    checked = 0
    for local in memory.locals.values():
        for cue in sorted(cues):
            for k in (1, 3, 6):
                expected = reference_anchors(local, cue, k)
                assert local.graph.anchors(cue, k) == expected, cue
                checked += bool(expected)
                got = local.graph.neighborhood(cue, 8, k)
                assert got == reference_neighborhood(local, cue, 8, k)
    assert checked > 100
    # a merge invalidates the index: a new state is found right after it is added
    local = memory.locals["kitchen"]
    before = local.graph.anchors("a brand new zebra state", 1)
    traj, out = alfworld_episode(rng, 9999)
    traj = Trajectory(traj.task, "A brand new zebra state.", traj.steps)
    memory.observe(Trajectory(
        Task("syn/kitchen/train/zebra", "alfworld", "train", "kitchen", traj.task.goal, {}),
        traj.initial_observation, traj.steps), out)  # fmt: skip
    after = local.graph.anchors("a brand new zebra state", 1)
    assert before != after and after[0]["similarity"] == 1.0
