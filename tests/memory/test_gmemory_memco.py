"""G-Memory as MemCo's code runs it (method=gmemory_memco): the global memory re-observes every
domain's episodes, domain agents read the global memory only, solved tasks shown without key
steps, failed tasks as one hint line, one insight, key steps at temperature 0."""

from __future__ import annotations

import json

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
from memarena.memory.gmemory import GMemory, prompts
from memarena.memory.team import DomainTeam

KEY = json.dumps({"key_steps": [{"step": 2, "why": "goal reached"}]})
MEMCO = dict(
    k=2,
    n_successes=1,
    n_failed=1,
    failed_cases="hint",
    top_b=1,
    rerank_successes=False,
    show_key_steps=False,
    key_steps_temperature=0.0,
)


def traj(task_id: str, goal: str, domain: str = "d", long: bool = False) -> Trajectory:
    task = Task(id=task_id, env="pddl", split="train", domain=domain, goal=goal)
    seen = "x " * 300 if long else "after"  # 600 characters: cut in the kept episode
    steps = [
        Step("pick a", f"{seen} pick a", 0.0, 0.5, Feedback(True, True)),
        Step("bad", "nothing happens", -1.0, 0.5, Feedback(False, False, "invalid_action")),
        Step("put a", "after put a", 1.0, 1.0, Feedback(True, True)),
    ]
    return Trajectory(task=task, initial_observation=f"start {seen}", steps=steps)


def outcome(success: bool) -> Outcome:
    return Outcome(success, 1.0 if success else 0.0, 3, "success" if success else "failure")


def query(task_id: str, goal: str, domain: str = "d") -> MemoryQuery:
    task = Task(id=task_id, env="pddl", split="test", domain=domain, goal=goal)
    return MemoryQuery(task=task, observation=Observation(text="start", goal=goal))


def make(llm: FakeLLM | None = None, **kw) -> GMemory:
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=FakeEmbedder)
    return GMemory(services=services, env_name="pddl", **kw)


# -- the config ---------------------------------------------------------------------------------
def test_config_is_gmemory_with_memco_settings():
    own = compose_cfg(["method=gmemory"]).method
    memco = compose_cfg(["method=gmemory_memco"]).method
    assert memco.name == own.name == "gmemory" and memco._target_ == own._target_
    # successful/failed top-k 1/1 -> max((2 + 2) // 2, 1) = 2 task-graph hits; insights_topk 1
    assert (memco.k, memco.n_successes, memco.n_failed, memco.top_b) == (2, 1, 1, 1)
    assert (memco.failed_cases, memco.show_key_steps, memco.key_steps_temperature) == (
        "hint",
        False,
        0.0,
    )
    assert memco.retrieve_threshold == 0.0 and memco.hops == 1 and not memco.rerank_successes
    counts = ("start_insights_threshold", "rounds_per_insights", "insights_point_num")
    assert [memco[c] for c in counts] == [5, 5, 5] and memco.merge_every == 20
    # G-Memory's own readings stay in gmemory.yaml
    assert (own.n_failed, own.failed_cases, own.show_key_steps) == (0, "none", True)
    assert own.key_steps_temperature == 0.1 and own.top_b == 5 and own.k == 1


def test_bad_failed_cases_is_a_config_error():
    with pytest.raises(ConfigError, match="failed_cases='all'"):
        make(FakeLLM(), failed_cases="all")


# -- the global memory --------------------------------------------------------------------------
def test_key_steps_asked_at_the_configured_temperature():
    for temperature in (0.1, 0.0):
        llm = FakeLLM([KEY])
        make(llm, key_steps_temperature=temperature).observe(traj("t", "v:1,0"), outcome(True))
        assert llm.requests[0].temperature == temperature


def test_merge_domains_reobserves_every_domain_in_order():
    """Two domains of 3 tasks each; the global memory observes a's 3 then b's 3 through the
    write path: a key-step call per task, a cause of failure per failed one, and the insight
    fine-tuning at its 5th task (5 tasks stored, 5 % 5 == 0), from the re-run."""
    llm = FakeLLM(default=KEY)
    memories = {}
    for domain, base in (("a", "v:1,0,"), ("b", "v:0,1,")):
        memory = make(llm, **MEMCO)
        for i in range(3):
            goal = f"{base}{i / 10}"
            memory.observe(traj(f"{domain}{i}", goal, domain, long=i == 0), outcome(i != 1))
        memories[domain] = memory
    assert all(len(m.insights) == 0 for m in memories.values())  # 3 tasks: no fine-tuning yet

    merged = make(FakeLLM(default=KEY), **MEMCO)
    seen: list[str] = []
    original = merged.observe

    def spy(trajectory, outcome_):
        seen.append(trajectory.task.id)
        original(trajectory, outcome_)

    merged.observe = spy
    tuned = []
    merged.run_finetune = lambda: tuned.append(merged.n_observed) or {}
    merged.merge_domains(memories)
    assert seen == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert merged.queries.ids == seen and merged.n_observed == 6 and tuned == [5]
    usage = merged.token_usage
    assert usage["key_steps"]["requests"] == 6 and usage["fail_reason"]["requests"] == 2
    # every episode read back gives the node the domain memory stored (observations cut, at
    # most 400 characters kept; nodes keep 300) and the same key-step request
    for memory in memories.values():
        for qid in memory.queries.ids:
            assert merged.queries.nodes[qid] == memory.queries.nodes[qid]
    first = [r for r in llm.requests if r.json_schema and "key_steps" in str(r.json_schema)]
    again = [r for r in merged.services.llm.requests if "key_steps" in str(r.json_schema)]
    assert first == again and all(r.temperature == 0.0 for r in again)


def test_merged_insights_come_from_the_rerun():
    """The fine-tuning rules come from the global memory's own calls on the combined stream:
    the domain memories (2 and 3 tasks) never fine-tune, the global one does at its 5th."""
    rule = json.dumps({"operations": [{"op": "ADD", "content": "pick before put"}]})
    domains = {}
    for domain, n in (("a", 2), ("b", 3)):
        memory = make(FakeLLM(default=KEY), **MEMCO)
        for i in range(n):
            memory.observe(traj(f"{domain}{i}", f"v:1,{i},0", domain), outcome(True))
        domains[domain] = memory
    assert sum(len(m.insights) for m in domains.values()) == 0
    merged = make(FakeLLM(default=rule), **MEMCO)
    merged.merge_domains(domains)
    (insight,) = merged.insights.insights.values()
    assert insight.content == "pick before put" and merged.token_usage["insights"]["calls"] > 0


def test_merge_refuses_a_memory_without_its_episodes():
    old = make(FakeLLM(default=KEY), **MEMCO)
    old.observe(traj("t", "v:1,0"), outcome(True))
    old.episodes = []  # a snapshot written before G-Memory kept its episodes
    with pytest.raises(ConfigError, match="acquire again"):
        make(FakeLLM(), **MEMCO).merge_domains({"a": old})


def test_episodes_survive_a_snapshot():
    memory = make(FakeLLM(default=KEY), **MEMCO)
    memory.observe(traj("t", "v:1,0", long=True), outcome(False))
    state = json.loads(json.dumps(memory.state_dict()))
    again = make(FakeLLM(), **MEMCO)
    again.load_state_dict(state)
    assert again.state_dict() == memory.state_dict()
    ((trajectory, result),) = again.stored_episodes()
    assert result == outcome(False) and trajectory.task.id == "t"
    # observations shown whole (the released reading) are kept whole for the global memory
    assert trajectory.steps[0].observation == traj("t", "v:1,0", long=True).steps[0].observation
    assert not trajectory.steps[1].feedback.valid_action
    cut = make(FakeLLM(default=KEY), **MEMCO, observation_chars=160)  # memarena's earlier cut
    cut.observe(traj("t", "v:1,0", long=True), outcome(False))
    ((trajectory, _),) = cut.stored_episodes()
    assert len(trajectory.steps[0].observation) == 400


# -- evaluation: the global memory only ---------------------------------------------------------
def team_of_two() -> DomainTeam:
    llm = FakeLLM(default=KEY)
    team = DomainTeam(lambda: make(llm, **MEMCO))
    team.begin_phase("acquire")
    team.observe_groups(
        [
            [(traj("a0", "v:1,0", "a"), outcome(True))],
            [(traj("b0", "v:0,1", "b"), outcome(True))],
            [(traj("b1", "v:0.1,1", "b"), outcome(False))],
        ]
    )
    team.begin_phase("eval")
    team.freeze()
    return team


def test_retrieve_in_team_reads_only_the_global_memory():
    team = team_of_two()
    merged = team.global_memory
    assert isinstance(merged, GMemory) and merged.queries.ids == ["a0", "b0", "b1"]
    # domain a's agent on a task like domain b's: its own memory holds only a0, the global one
    # holds b0 (solved) and b1 (failed) nearest
    team.set_view("a")
    (ctx,) = team.retrieve_batch([query("q", "v:0,1", "b")])
    assert ctx.memory_ids == ["b0", "b1"] and "v:0,1 (Resolved)" in ctx.slots["past_successes"]
    own = team.domains["a"].retrieve(query("q", "v:0,1", "b"))
    assert own.memory_ids == ["a0"]  # what the bypassed local store would have shown
    assert team.domains["a"].retrieve_in_team(query("q", "v:0,1"), None) == own


def test_rendering_without_key_steps_with_the_hint_and_one_insight():
    memory = make(FakeLLM(default=KEY), **MEMCO)
    memory.observe(traj("s", "v:1,0"), outcome(True))
    memory.observe(traj("f", "v:0.9,0.1"), outcome(False))
    first = memory.insights.add("pick before put", {"s", "f"})
    memory.insights.add("look first", {"s"})
    memory.freeze()
    ctx = memory.retrieve(query("q", "v:1,0.05"))
    solved = ctx.slots["past_successes"].splitlines()
    assert solved == [
        prompts.PAST_TRAJECTORIES_HEADER,
        "Task: v:1,0 (Resolved)",
        "Full trajectory:",
        "  start: start after",
        "  step 1: > pick a -> after pick a",  # the rejected step 2 left out
        "  step 3: > put a -> after put a",
    ]
    # insights_topk 1: the best-supported insight only, then the hint for the failed task f
    assert ctx.slots["insights"].splitlines() == [
        prompts.INSIGHTS_HEADER,
        "1. pick before put",
        f"2. {prompts.FAILED_HINT}",
    ]
    assert ctx.memory_ids == ["s", first.id, "f"]


def test_gmemory_own_rendering_keeps_key_steps_and_never_shows_failures():
    memory = make(FakeLLM(default=KEY), rerank_successes=False)
    memory.observe(traj("s", "v:1,0"), outcome(True))
    memory.observe(traj("f", "v:0.9,0.1"), outcome(False))
    ctx = memory.retrieve(query("q", "v:1,0.05"))
    solved = ctx.slots["past_successes"].splitlines()
    assert solved[:4] == [
        prompts.PAST_SUCCESSES_HEADER,
        "Task: v:1,0 (Resolved)",
        "Key steps:",
        "  step 2: > bad -> nothing happens",
    ]
    assert "insights" not in ctx.slots and ctx.memory_ids == ["s"]


def test_other_memory_calls_are_asked_at_the_llm_config_default():
    """G-Memory's cause-of-failure, insight and merge calls set no temperature in its code, so
    the llm_config default 0.1 applies (method.memory_temperature); the key steps have their
    own (0.1, MemCo's fork 0)."""
    assert compose_cfg(["method=gmemory"]).method.memory_temperature == 0.1
    for temperature in (0.1, 0.0):
        llm = FakeLLM(default=KEY)
        memory = make(llm, memory_temperature=temperature, key_steps_temperature=0.0,
                      start_insights_threshold=2, rounds_per_insights=2, merge_every=2)  # fmt: skip
        for i in range(2):
            memory.observe(traj(f"t{i}", f"v:1,0.{i}"), outcome(i == 0))
        others = [r for r in llm.requests if r.messages[0]["content"] != prompts.KEY_STEPS_SYSTEM]
        assert others and {r.temperature for r in others} == {temperature}
