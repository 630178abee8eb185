"""MemCo: admissible guidance only, the global memory built when acquisition ends, and the
mechanisms of MemCo's code the paper does not describe (issue 33, items 5-7).

- Item 5 (B.4.4 "resolve action conflicts by discarding unavailable actions"): agents learnt on
  barman, gripper and blocksworld (three expert episodes each), queried at every step of
  expert episodes (the PDDL env lists the applicable actions): no rendered "(next: ...)" is
  outside the admissible set. Measured with the earlier code on this corpus: on blocksworld,
  31 of 31 shown next actions inadmissible under the barman agent's view (16 steps) and 35 of
  35 under gripper's; on their own domains 47 of 51 (gripper) and 19 of 21 (blocksworld). Now
  0 inadmissible; the agents' own domains still show 4 and 2 next actions, the admissible ones.
- Item 6 (F.5): acquisition retrievals show no ``global:`` entry, however many domains hold
  records; once acquisition ends the promoted records are retrievable. The
  ``global_during_acquisition`` ablation keeps the earlier behaviour.
- Item 7: ``global_exclude_owner`` and the source weights of Compose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memarena.core import ConfigError
from memarena.core.types import Feedback, MemoryQuery, Observation, Outcome, Step, Task, Trajectory
from memarena.envs.pddl.env import PDDLEnv
from memarena.memory.memco import MemCo
from memarena.memory.memco.base import Entry
from memarena.memory.memco.compose import compose
from memarena.memory.memco.query import DecisionQuery
from memarena.memory.memco.roles import GENERIC

NEXT = re.compile(r"\(next: ([^)]*)\)")


# ------------------------------------------------------------------ PDDL episodes (expert)


def play(env: PDDLEnv, task: Task, on_step=None, budget: int = 30):
    """An expert episode of ``task``; ``on_step(query)`` is called before every action."""
    episode = env.open(task)
    obs = episode.reset()
    steps: list[Step] = []
    success = False
    for _ in range(budget):
        if on_step is not None:
            progress = steps[-1].progress if steps else 0.0
            on_step(MemoryQuery(task, obs, len(steps), list(steps), progress))
        action = episode.expert_action()
        if action is None:
            break
        result = episode.step(action)
        steps.append(Step(action, result.observation.text, result.reward, result.progress,
                          result.feedback))  # fmt: skip
        obs, success = result.observation, result.success
        if result.done:
            break
    progress = steps[-1].progress if steps else 0.0
    return Trajectory(task, "", steps), Outcome(success, progress, len(steps), "success")


@pytest.fixture(scope="module")
def pddl():
    env = PDDLEnv(domains=["barman", "gripper", "blocksworld"], n_train=3, n_test=2, seed=0)
    train = {d: [t for t in env.tasks("train") if t.domain == d] for d in env.domains()}
    test = {d: [t for t in env.tasks("test") if t.domain == d] for d in env.domains()}
    return env, train, test


def pddl_memory(pddl, domains=("barman", "gripper", "blocksworld"), **kwargs) -> MemCo:
    env, train, _ = pddl
    memory = MemCo(env_name="pddl", **kwargs)
    for d in domains:
        for task in train[d]:
            memory.observe(*play(env, task))
    memory.freeze()
    memory.begin_phase("eval")
    return memory


def shown_next(memory: MemCo, env: PDDLEnv, tasks: list[Task]) -> dict[str, int]:
    """Per step: retrieve, count the rendered next actions and those not admissible; the
    compiled and reference selections are compared on the way."""
    counts = {"steps": 0, "shown": 0, "inadmissible": 0, "hidden_plans": 0}

    def on_step(mq: MemoryQuery) -> None:
        fast, ref = memory._select(mq), memory._select(mq, reference=True)
        assert (fast is None) == (ref is None)
        if fast is not None:
            for a, b in ((fast[1].local, ref[1].local), (fast[1].global_, ref[1].global_)):
                assert [(e.id, e.rank, e.extra["next_action"]) for e in a] == [
                    (e.id, e.rank, e.extra["next_action"]) for e in b
                ]
            counts["hidden_plans"] += sum(
                e.kind in ("workflow", "case") and e.extra["next_action"] is None
                for e in fast[1].local + fast[1].global_
            )
        text = memory.retrieve(mq).slots.get("memco", "")
        admissible = {" ".join(a.lower().split()) for a in mq.observation.admissible_actions}
        nexts = NEXT.findall(text)
        counts["steps"] += 1
        counts["shown"] += len(nexts)
        counts["inadmissible"] += sum(n not in admissible for n in nexts)

    for task in tasks:
        play(env, task, on_step)
    return counts


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"unavailable_next_local": "hide", "unavailable_next_global": "drop"}],
    ids=["code_defaults", "paper_reading"],
)
def test_cross_domain_pddl_shows_no_unavailable_next_action(pddl, kwargs):
    env, _, test = pddl
    memory = pddl_memory(pddl, **kwargs)
    for view in ("barman", "gripper"):
        memory.set_view(view)
        cross = shown_next(memory, env, test["blocksworld"])
        assert cross["steps"] == 16 and cross["inadmissible"] == 0, (view, cross)
    for view in ("gripper", "blocksworld"):
        memory.set_view(view)
        own = shown_next(memory, env, test[view])
        # the agent's own domain: next actions are shown, every one available
        assert own["shown"] > 0 and own["inadmissible"] == 0, (view, own)
    if kwargs:  # local hide: foreign plans are retrieved, their next step discarded
        memory.set_view("barman")
        assert shown_next(memory, env, test["blocksworld"])["hidden_plans"] > 0


def test_bad_unavailable_next_and_weights_are_named():
    with pytest.raises(ConfigError, match="unavailable_next_local='keep' must be one of"):
        MemCo(env_name="pddl", unavailable_next_local="keep")
    with pytest.raises(ConfigError, match="method.global_weight=0"):
        MemCo(env_name="pddl", global_weight=0)


# ------------------------------------------------------------------ ALFWorld-like episodes

GOAL = "Your task is to: put a clean mug in cabinet."
OK = Feedback(True, True, None)


APPLE = "Your task is to: put a hot apple in fridge."
APPLE_MOVES = [
    ("go to countertop 1", "You arrive at countertop 1. On it you see a apple 1.", 0.0),
    ("take apple 1 from countertop 1", "You pick up the apple 1 from the countertop 1.", 0.25),
    ("go to microwave 1", "You arrive at microwave 1.", 0.25),
    ("heat apple 1 with microwave 1", "You heat the apple 1 using the microwave 1.", 0.5),
    ("go to fridge 1", "You arrive at fridge 1. The fridge 1 is open.", 0.5),
    ("move apple 1 to fridge 1", "You move the apple 1 to the fridge 1.", 1.0),
]


def trajectory(domain: str, i: int, goal: str = GOAL, obj: str = "mug", moves=None) -> Trajectory:
    task = Task(f"alfworld/{domain}/train/{i:04d}", "alfworld", "train", domain, goal, {})
    moves = moves or [
        ("go to countertop 1", f"You arrive at countertop 1. On it you see a {obj} 1.", 0.0),
        (f"take {obj} 1 from countertop 1", f"You pick up the {obj} 1 from countertop 1.", 0.25),
        ("go to sinkbasin 1", "You arrive at sinkbasin 1.", 0.25),
        (f"clean {obj} 1 with sinkbasin 1", f"You clean the {obj} 1 using the sinkbasin 1.", 0.5),
        ("go to cabinet 2", "You arrive at cabinet 2. The cabinet 2 is open.", 0.5),
        (f"move {obj} 1 to cabinet 2", f"You move the {obj} 1 to the cabinet 2.", 1.0),
    ]  # fmt: skip
    return Trajectory(task, "You are in the middle of a room.",
                      [Step(a, o, 0.0, p, OK) for a, o, p in moves])  # fmt: skip


def at_sinkbasin(domain: str, goal: str = GOAL, obj: str = "mug") -> MemoryQuery:
    task = Task(f"alfworld/{domain}/valid_seen/0001", "alfworld", "valid_seen", domain, goal, {})
    history = [
        Step("go to countertop 1", "You arrive at countertop 1.", 0.0, 0.0, OK),
        Step(f"take {obj} 1 from countertop 1", f"You pick up the {obj} 1.", 0.0, 0.25, OK),
        Step("go to sinkbasin 1", "You arrive at sinkbasin 1.", 0.0, 0.25, OK),
    ]
    actions = [f"clean {obj} 1 with sinkbasin 1", "go to cabinet 2", "go to countertop 1", "look"]
    obs = Observation("You arrive at sinkbasin 1.", goal, actions)
    return MemoryQuery(task, obs, 3, history, 0.25)


def observe(memory: MemCo, domain: str, n: int, **kw) -> None:
    for i in range(n):
        traj = trajectory(domain, i, **kw)
        memory.observe(traj, Outcome(True, 1.0, len(traj.steps), "success"))


def global_ids(context) -> list[str]:
    return [i for i in context.memory_ids if i.startswith("global:")]


@pytest.mark.parametrize("during", [False, True], ids=["paper", "ablation"])
def test_acquisition_sees_no_global_memory_until_it_ends(during):
    memory = MemCo(env_name="alfworld", global_during_acquisition=during)
    memory.begin_phase("acquire")
    seen = []
    for domain in ("kitchen", "bathroom", "bedroom"):
        observe(memory, domain, 3)
        seen.append(global_ids(memory.retrieve(at_sinkbasin(domain))))
    local = sum(len(m.store) for m in memory.locals.values())
    if during:  # the earlier behaviour: rebuilt before each retrieval, shared records shown
        assert all(seen[1:]) and memory.size() > local
        return
    assert seen == [[], [], []]  # three domains hold records, none reaches a retrieval
    assert len(memory.global_memory) == 0 and memory.size() == local  # not even built
    memory.freeze()  # acquisition ended (the pipeline freezes, then begins "eval")
    memory.begin_phase("eval")
    assert len(memory.global_memory) > 0 and memory.size() > local
    memory.set_view("kitchen")
    assert global_ids(memory.retrieve(at_sinkbasin("kitchen")))


def test_loading_a_snapshot_publishes_the_global_memory():
    memory = MemCo(env_name="alfworld")
    observe(memory, "kitchen", 3)
    observe(memory, "bathroom", 3)
    loaded = MemCo(env_name="alfworld")
    loaded.load_state_dict(memory.state_dict())  # the pipeline loads in the acquire phase
    loaded.set_view("kitchen")
    assert global_ids(loaded.retrieve(at_sinkbasin("kitchen")))


# ------------------------------------------------------------------ exclude owner


def test_exclude_owner_hides_records_only_the_viewing_agent_contributed():
    """Kitchen cleans mugs for the cabinet, bathroom heats apples for the fridge: each promotes
    records only it contributed (W(3, 0) = 0.5258 >= 0.35) plus the shared 'go to countertop'
    steps. A view does not retrieve the records only its own agent contributed (the code's
    memco_global_exclude_owner=True); the other agent's view does."""
    memory = MemCo(env_name="alfworld")
    observe(memory, "kitchen", 3)
    observe(memory, "bathroom", 3, goal=APPLE, obj="apple", moves=APPLE_MOVES)
    memory.freeze()
    sources = {f"global:{g.key}": tuple(g.sources) for g in memory.global_memory}
    assert {("kitchen",), ("bathroom",)} <= set(sources.values())
    shown: dict[tuple[bool, str], list[tuple[str, ...]]] = {}
    for exclude in (True, False):
        m = MemCo(env_name="alfworld", global_exclude_owner=exclude)
        m.load_state_dict(memory.state_dict())
        for view in ("kitchen", "bathroom"):
            m.set_view(view)
            mq = at_sinkbasin("kitchen")  # a mug task: kitchen's records apply
            fast, ref = m._select(mq), m._select(mq, reference=True)
            assert [e.id for e in fast[1].global_] == [e.id for e in ref[1].global_]
            shown[(exclude, view)] = [sources[e.id] for e in fast[1].global_]
    assert ("kitchen",) in shown[(False, "kitchen")]  # not excluded: its own records reach it
    assert ("kitchen",) not in shown[(True, "kitchen")]  # excluded for its own view
    assert ("kitchen",) in shown[(True, "bathroom")]  # ... and kept for the other agent


# ------------------------------------------------------------------ source weights


def entry(source: str, rank: float, action: str) -> Entry:
    return Entry(id=f"{source}:actionable:{action}", source=source, kind="actionable",
                 condition="you are at sinkbasin", actions=(action,), outcome="progress",
                 text="", rank=rank, extra={"next_action": action})  # fmt: skip


def test_global_weight_scales_global_rank_in_compose():
    """One ground slot: the source-weighted full rank decides. local 1.0 vs global 1.2:
    1.2 * 0.65 = 0.78 < 1.0, local first; unweighted, global first. Penalties shrink too (as
    the code scales its negative global rows): local -1.0 vs global -1.2 -> -0.78, global
    first."""
    q = DecisionQuery("g", {}, "you are at sinkbasin", ("open a", "take b"), 0.0, "start",
                      (), None, 0)  # fmt: skip

    def first(local_rank: float, global_rank: float, weight: float) -> str:
        composed = compose([entry("local", local_rank, "open a")],
                           [entry("global", global_rank, "take b")], q, GENERIC,
                           max_items_per_role=1, global_weight=weight)  # fmt: skip
        return composed.roles["ground"][0].source

    assert first(1.0, 1.2, 0.65) == "local" and first(1.0, 1.2, 1.0) == "global"
    assert first(-1.0, -1.2, 0.65) == "global" and first(-1.0, -1.2, 1.0) == "local"
    memory = MemCo(env_name="alfworld")
    assert (memory.local_weight, memory.global_weight) == (1.0, 0.65)


def test_history_window_is_six_steps_on_scienceworld_only():
    """MemCo's code keeps the last 6 steps in the ScienceWorld prompt and the whole trajectory
    elsewhere (conf/method/memco.yaml history_steps_by_env; None: the protocol's window)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    node = OmegaConf.load(Path(__file__).parents[2] / "conf" / "method" / "memco.yaml")
    windows = OmegaConf.to_container(node.history_steps_by_env)
    assert windows == {"scienceworld": 6}
    assert MemCo(env_name="scienceworld", history_steps_by_env=windows).history_steps == 6
    for env in ("pddl", "alfworld", "fever"):
        assert instantiate(node, env_name=env).history_steps is None
