"""EvoGraph-Mem as a memory method: the controller's decisions (a scripted test double) applied
to the insight graph through G-Memory's query graph, retrieval with conflicting evidence,
archived insights never retrieved, fallbacks counted, token accounting, snapshots, and
`python run.py method=evograph` with the embedded model as the memory LLM."""

from __future__ import annotations

import json

import pytest
import yaml
from doubles import FakeEmbedder, FakeLLM

from conftest import ROOT, run_py
from memarena.core import ConfigError, MemoryServices
from memarena.core.types import Feedback, MemoryQuery, Observation, Outcome, Step, Task, Trajectory
from memarena.memory.evograph import EvoGraphMem

GOAL = "v:1,0,0"  # FakeEmbedder: every task with this goal embeds identically (all linked)


def traj(i: int, goal: str = GOAL) -> Trajectory:
    task = Task(f"pddl/t/{i}", "pddl", "test", "gripper", goal)
    steps = [
        Step("pick ball1 rooma left", "ok", 0.0, 0.5, Feedback(True, True)),
        Step("move rooma roomb", "ok", 0.0, 1.0, Feedback(True, True)),
    ]
    return Trajectory(task, "start", steps)


def done(success: bool = True) -> Outcome:
    return Outcome(success, 1.0 if success else 0.0, 2, "success" if success else "failure")


def decision(ops: dict[str, str] | None = None, add: str = "", revise: str = "") -> str:
    body: dict = {
        i: ({"op": op, "revision": revise} if op == "REVISE" else {"op": op})
        for i, op in (ops or {}).items()
    }
    body.update(add=bool(add), insight=add)
    return json.dumps(body)


def key_steps() -> str:
    return json.dumps({"key_steps": [{"step": 1, "why": "first move"}]})


# query retrieval without G-Memory's LLM re-ranking and with a wide neighbourhood, so the
# scripted answers below go to the controller and every stored task is in reach
RETRIEVAL = {"k": 3, "n_successes": 2, "link_threshold": 0.7, "retrieve_threshold": -1.0}
RETRIEVAL["rerank_successes"] = False


def make(answers: list[str], **kw) -> tuple[EvoGraphMem, FakeLLM]:
    llm = FakeLLM(answers)
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=FakeEmbedder)
    return EvoGraphMem(services=services, env_name="pddl", **{**RETRIEVAL, **kw}), llm


def run_task(memory: EvoGraphMem, i: int, success: bool = True) -> list[str]:
    """Retrieve (as the runner does), then observe; returns the insight ids shown."""
    t = traj(i)
    context = memory.retrieve(MemoryQuery(t.task, Observation("start", t.task.goal)))
    memory.observe(t, done(success))
    return [m for m in context.memory_ids if m.startswith("ins-")]


def test_controller_operations_follow_eq_13_to_17():
    memory, _ = make(
        [
            key_steps(),
            decision(add="Pick before moving."),  # t0: ADD ins-0001
            key_steps(),
            decision({"ins-0001": "KEEP"}, add="Drop at the goal room."),  # t1
            key_steps(),
            decision(
                {"ins-0001": "REVISE", "ins-0002": "ARCHIVE"},
                revise="Pick with a free gripper before moving.",
            ),  # t2 failed
        ]
    )
    assert run_task(memory, 0) == []
    g = memory.graph
    first = g.get("ins-0001")
    assert (first.content, first.pos, first.neg, first.active) == (
        "Pick before moving.",
        {"pddl/t/0"},
        set(),
        True,
    )
    assert run_task(memory, 1) == ["ins-0001"]
    assert g.get("ins-0001").pos == {"pddl/t/0", "pddl/t/1"}  # KEEP: Omega+ ∪ {q}
    assert g.get("ins-0002").pos == {"pddl/t/1"}
    assert ("ins-0001", "ins-0002", "pddl/t/1") in {tuple(e) for e in g.edges}  # Eq. 18
    shown = run_task(memory, 2, success=False)
    assert set(shown) == {"ins-0001", "ins-0002"}
    old, archived, new = g.get("ins-0001"), g.get("ins-0002"), g.get("ins-0003")
    assert (old.active, old.neg) == (False, {"pddl/t/2"})  # REVISE archives the old node
    assert (archived.active, archived.neg) == (False, {"pddl/t/2"})  # ARCHIVE (Eq. 13)
    assert (new.content, new.pos, new.neg, new.active, new.parent) == (
        "Pick with a free gripper before moving.",
        {"pddl/t/0", "pddl/t/1", "pddl/t/2"},
        set(),
        True,
        "ins-0001",
    )  # Eq. 15
    assert not any("pddl/t/2" in e for e in map(tuple, g.edges))  # failed: no new edges
    # archived insights are never retrieved again (the controller's "{}" for t3 is malformed)
    assert run_task(memory, 3) == ["ins-0003"]
    m = memory.metrics()
    assert m["controller_decisions"] == {"KEEP": 1, "ARCHIVE": 1, "REVISE": 1, "ADD": 2}
    assert m["memory_insights"] == 3 and m["memory_insights_archived"] == 2


def test_retrieval_penalises_conflicting_evidence():
    memory, _ = make([], lam=1.0, top_b=1)
    a = memory.graph.add("A", "pddl/t/0")
    b = memory.graph.add("B", "pddl/t/0")
    for q in ("pddl/t/1", "pddl/t/2"):
        memory.graph.keep(a, q)
        memory.graph.keep(b, q)
    memory.graph.get(a).neg.update({"pddl/t/1", "pddl/t/2"})  # A conflicts with 2 queries
    expanded = ["pddl/t/0", "pddl/t/1", "pddl/t/2"]
    assert memory.select_insights(expanded, expanded) == [(b, "B")]  # r: A 3-2=1, B 3
    memory.lam = 0.0  # no conflict penalty: the tie goes to the older node
    assert memory.select_insights(expanded, expanded) == [(a, "A")]
    memory.graph.archive(b, "pddl/t/3")
    memory.lam = 1.0
    assert memory.select_insights(expanded, expanded) == [(a, "A")]  # archived: never


def test_malformed_controller_output_is_counted_and_changes_nothing():
    memory, llm = make(
        [
            key_steps(),
            decision(add="Pick first."),
            key_steps(),
            "this is not json",
            key_steps(),
            decision({"ins-9999": "KEEP"}),
        ]
    )
    run_task(memory, 0)
    before = memory.graph.to_dict()
    run_task(memory, 1)  # not JSON: one fallback for the whole answer
    run_task(memory, 2)  # an unknown id, and ins-0001 left without an edit: two invalid ops
    assert memory.graph.to_dict() == before
    assert memory.controller_fallbacks == 1 and memory.controller_invalid_ops == 2
    assert llm.usage.fallbacks == {"evograph_controller": 1, "evograph_controller_op": 2}
    assert memory.metrics()["controller_invalid_ops"] == 2


def test_one_bad_revise_keeps_the_good_archive_and_add():
    memory, llm = make(
        [
            key_steps(),
            decision(add="Pick first."),
            key_steps(),
            decision({"ins-0001": "KEEP"}, add="Move after picking."),
        ]
    )
    run_task(memory, 0)
    run_task(memory, 1)  # shown ins-0001; adds ins-0002
    bad = {
        "ins-0001": {"op": "ARCHIVE"},
        "ins-0002": {"op": "REVISE", "revision": ""},
        "add": True,
        "insight": "Check the room first.",
    }
    llm.answers += [key_steps(), json.dumps(bad)]
    assert run_task(memory, 2, success=False) == ["ins-0001", "ins-0002"]
    g = memory.graph
    assert not g.get("ins-0001").active and g.get("ins-0001").neg == {"pddl/t/2"}  # ARCHIVE
    assert g.get("ins-0002").active and g.get("ins-0002").neg == set()  # bad REVISE: nothing
    assert g.get("ins-0003").content == "Check the room first."  # ADD
    assert memory.controller_invalid_ops == 1 and memory.controller_fallbacks == 0
    assert llm.usage.fallbacks == {"evograph_controller_op": 1}
    assert memory.decisions == {"KEEP": 1, "ARCHIVE": 1, "REVISE": 0, "ADD": 3}
    state = json.loads(json.dumps(memory.state_dict()))
    again, _ = make([])
    again.load_state_dict(state)
    assert again.controller_invalid_ops == 1


def hotpot_like(n_steps: int = 14, page_chars: int = 900) -> Trajectory:
    """A ReAct HotpotQA episode as the runner records it: multi-line Wikipedia paragraphs far
    longer than a line, failing lookups, more steps than any summary would keep, then Finish."""
    task = Task("hotpotqa/dev/7", "hotpotqa", "test", "bridge", GOAL)
    steps = []
    for i in range(1, n_steps):
        page = f"Page {i}: Kessby is a village.\n" + " ".join(f"s{i}w{j}" for j in range(400))
        obs = page[:page_chars] + f"\n(end of paragraph {i})"
        ok = i % 5 != 0  # every fifth lookup finds nothing
        fb = Feedback(ok, ok, None if ok else "no_effect")
        steps.append(Step(f"Search[entity {i}]", obs if ok else "No more results.", 0.0, 0.0, fb))
    steps.append(
        Step("Finish[Kessby]", "Episode finished, reward = 0", 0.0, 0.0, Feedback(True, True))
    )
    return Trajectory(task, "Question: Where was the engineer born?\n(2 hops)", steps)


def test_controller_request_holds_every_step_and_the_final_answer():
    memory, llm = make([key_steps(), decision(add="Pick first.")])
    t = hotpot_like()
    memory.observe(t, Outcome(False, 0.0, len(t.steps), "failure"))
    request = llm.requests[-1]  # the controller's ChatRequest, as the memory LLM receives it
    assert request.json_schema["required"] == ["add", "insight"]  # the controller's own schema
    prompt = request.messages[1]["content"]
    assert t.initial_observation in prompt
    for i, step in enumerate(t.steps, 1):  # every step, action and observation verbatim
        assert f"{i}. > {step.action} -> {step.observation}" in prompt
    assert "[failed: no_effect]" in prompt and "left out" not in prompt
    assert "Final answer (the agent's last action): Finish[Kessby]" in prompt
    assert f"Final outcome: Failed (status failure, progress 0.00, {len(t.steps)} steps)" in prompt
    assert "Task feedback: Failed" in prompt
    assert memory.metrics()["controller_truncations"] == 0


def test_trajectory_is_cut_only_past_the_context_and_counted():
    # 3000 tokens of context, less the reply bound (the schema's: {"add", "insight" <= 300})
    # and 64 for the template, at 3 characters a token
    memory, llm = make([key_steps(), decision(add="Pick first.")], controller_context_tokens=3000)
    t = hotpot_like(n_steps=30, page_chars=2000)  # about 60000 characters of trajectory
    memory.observe(t, done(False))
    request = llm.requests[-1]
    assert sum(len(m["content"]) for m in request.messages) <= (3000 - request.max_tokens - 64) * 3
    prompt = request.messages[1]["content"]
    for i, step in enumerate(t.steps, 1):  # observations clipped, every step still there
        assert f"{i}. > {step.action} -> " in prompt
    assert "Final answer (the agent's last action): Finish[Kessby]" in prompt
    assert memory.metrics()["controller_truncations"] == 1
    assert llm.usage.fallbacks == {"evograph_controller_truncated": 1}
    state = json.loads(json.dumps(memory.state_dict()))
    again, _ = make([])
    again.load_state_dict(state)
    assert again.controller_truncations == 1


def test_controller_context_comes_from_the_backbone_unless_set():
    memory, llm = make([])
    assert memory.controller.context_tokens == 32768  # the double states no context
    memory, llm = make([])
    llm.context_limit = 8192  # hf: max_position_embeddings; vllm: max_model_len
    assert memory.controller.context_tokens == 8192
    memory, llm = make([], controller_context_tokens=100_000)
    llm.context_limit = 8192
    assert memory.controller.context_tokens == 8192  # never past the backbone's own limit
    memory, _ = make([], controller_context_tokens=4000)
    assert memory.controller.context_tokens == 4000
    with pytest.raises(ConfigError, match="controller_context_tokens"):
        make([], controller_context_tokens=0)


@pytest.mark.parametrize(
    ("keep_mode", "first_pos", "second_pos", "r_at_t2"),
    [
        ("untouched", {"pddl/t/0"}, {"pddl/t/1"}, 1),  # Figure 3's add+keep: retained as they were
        # Eq. 17 on every KEEP: the failed t1 and the resolved t2 join Omega+
        ("reinforce", {"pddl/t/0", "pddl/t/1", "pddl/t/2"}, {"pddl/t/1", "pddl/t/2"}, 2),
    ],
)
def test_add_keep_on_a_failed_query(keep_mode, first_pos, second_pos, r_at_t2):
    memory, llm = make(
        [
            key_steps(),
            decision(add="Pick first."),  # t0 resolved: ADD ins-0001 = (., {t0}, {}, 1)
            key_steps(),
            decision({"ins-0001": "KEEP"}, add="Check the gripper."),  # t1 FAILED: ins-0002
            key_steps(),
            decision({"ins-0001": "KEEP", "ins-0002": "KEEP"}, add="Move last."),  # t2: ins-0003
        ],
        controller_ops=["KEEP"],
        keep_mode=keep_mode,
    )
    run_task(memory, 0)
    assert run_task(memory, 1, success=False) == ["ins-0001"]
    g = memory.graph
    # after the failed t1: untouched (., {t0}, {}, 1); reinforce (., {t0, t1}, {}, 1)
    assert g.get("ins-0001").pos == first_pos - {"pddl/t/2"} and g.get("ins-0001").neg == set()
    # r of ins-0001 at t2 (Q~ = {t0, t1}, lambda 1): untouched 1 - 0 = 1, reinforce 2 - 0 = 2
    assert g.utility(g.get("ins-0001"), {"pddl/t/0", "pddl/t/1"}, 1.0) == r_at_t2
    assert g.edges == []  # failed: no Eq. 18 edges
    assert set(run_task(memory, 2)) == {"ins-0001", "ins-0002"}
    for node_id, pos in (("ins-0001", first_pos), ("ins-0002", second_pos)):
        node = g.get(node_id)
        assert (node.pos, node.neg, node.active) == (pos, set(), True)
    assert g.get("ins-0003").pos == {"pddl/t/2"}  # Eq. 16 either way
    # resolved t2: Eq. 18 edges from both retrieved insights to the new one, either way
    assert {tuple(e) for e in g.edges} == {
        ("ins-0001", "ins-0003", "pddl/t/2"),
        ("ins-0002", "ins-0003", "pddl/t/2"),
    }
    assert memory.decisions == {"KEEP": 3, "ARCHIVE": 0, "REVISE": 0, "ADD": 3}
    system = llm.requests[-1].messages[0]["content"]
    untouched = keep_mode == "untouched"
    assert ("KEEP: the insight stays in memory exactly as it is." in system) == untouched
    assert ("becomes positive evidence" in system) == (not untouched)


def test_figure3_add_keep_reads_keep_as_untouched():
    conf = ROOT / "conf" / "ablation" / "evograph"
    cells = {
        name: yaml.safe_load((conf / f"{name}.yaml").read_text())["method"]
        for name in ("add_keep", "add_keep_reinforce", "add_keep_archive", "all")
    }
    assert cells["add_keep"] == {"controller_ops": ["KEEP"], "keep_mode": "untouched"}
    assert cells["add_keep_reinforce"] == {"controller_ops": ["KEEP"], "keep_mode": "reinforce"}
    assert cells["add_keep_archive"]["keep_mode"] == cells["all"]["keep_mode"] == "reinforce"
    with pytest.raises(ConfigError, match="keep_mode"):
        make([], keep_mode="grow")


def test_ablation_ops_are_enforced_and_tokens_counted():
    memory, _ = make(
        [key_steps(), decision(add="Pick first."), key_steps(), decision({"ins-0001": "ARCHIVE"})],
        controller_ops=["KEEP"],
    )
    run_task(memory, 0)
    run_task(memory, 1)  # ARCHIVE is not allowed in add+keep: a counted invalid operation
    assert memory.graph.get("ins-0001").active and memory.controller_invalid_ops == 1
    usage = memory.token_usage
    assert usage["controller"]["calls"] == 2 and usage["key_steps"]["calls"] == 2
    assert memory.own_tokens() == 4 * 13  # FakeLLM: 10 + 3 tokens per request
    with pytest.raises(ConfigError, match="controller_ops"):
        make([], controller_ops=["DELETE"])


def test_snapshot_round_trip_keeps_versions_and_never_retrieves_archived():
    memory, _ = make(
        [
            key_steps(),
            decision(add="Pick first."),
            key_steps(),
            decision({"ins-0001": "REVISE"}, revise="Pick, then move."),
        ]
    )
    run_task(memory, 0)
    run_task(memory, 1)
    state = json.loads(json.dumps(memory.state_dict()))
    assert [i["id"] for i in state["insights"]] == ["ins-0001", "ins-0002"]
    again, _ = make([])
    again.load_state_dict(state)
    assert again.graph.to_dict() == memory.graph.to_dict()
    assert [v["content"] for v in again.graph.history("ins-0002")] == [
        "Pick first.",
        "Pick, then move.",
    ]
    expanded = ["pddl/t/0", "pddl/t/1"]
    assert [i for i, _ in again.select_insights(expanded, expanded)] == ["ins-0002"]


def test_run_py_evograph_with_the_embedded_memory_llm(tmp_path):
    proc = run_py(
        [
            "method=evograph",
            "env=pddl",
            "backbone=scripted",
            "memory_backbone=smollm2_135m",
            "protocol=dynamic",
            "protocol.max_train_tasks=0",
            "protocol.max_eval_tasks=2",
            "protocol.step_budget=4",
            "logger=none",
            f"paths.results_dir={tmp_path}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(next(tmp_path.rglob("metrics.json")).read_text())
    memory_llm = json.loads(next(tmp_path.rglob("usage.json")).read_text())["memory"]
    usage = metrics["memory_token_usage"]
    assert {p: (u["calls"], u["requests"]) for p, u in usage.items()} == {
        "key_steps": (2, 2),  # one call per evaluated (and learned-from) task
        "controller": (2, 2),
    }
    # what SmolLM2 decides is not fixed; what must hold whatever it answers:
    decisions = metrics["controller_decisions"]
    assert decisions["ADD"] <= 2 - metrics["controller_fallbacks"]  # one per parsed answer
    # KEEP / ARCHIVE / REVISE only on shown insights: at most the first task's one ADD
    assert decisions["KEEP"] + decisions["ARCHIVE"] + decisions["REVISE"] <= 1
    assert metrics["memory_insights"] == decisions["ADD"] + decisions["REVISE"]  # new nodes
    archived = decisions["ARCHIVE"] + decisions["REVISE"]  # REVISE archives the old node
    assert metrics["memory_insights_archived"] == archived
    # the method's counts agree with the memory LLM's own accounting in usage.json
    assert metrics["controller_fallbacks"] == memory_llm["fallbacks"].get("evograph_controller", 0)
    spent = {p: u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for p, u in usage.items()}
    assert 0 < spent["controller"] < sum(spent.values())
    assert metrics["memory_tokens"] == sum(spent.values())
    assert metrics["memory_tokens"] == memory_llm["prompt_tokens"] + memory_llm["completion_tokens"]
