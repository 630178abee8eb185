"""The released agent loop (protocol.agent_loop gmemory_autogen / memco_autogen): the
stuck-solver helper fires on the third identical action and not before, its turn is recorded;
the prompt's sections come in the released order; MemCo's meta-check adds a think: step that
uses no budget; a FEVER thought is a step of its own; long observations arrive whole; MemCo's
ScienceWorld compaction; the paper experiments choose the loop, the online PDDL order and the
released budgets."""

from __future__ import annotations

import pytest

from conftest import CONF, compose_cfg
from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.agent.autogen import (
    EXAMPLES_HEADING,
    HELPER,
    HELPER_PREAMBLE,
    HOW_TO_USE_HEADING,
    INSIGHTS_HEADING,
    LAYOUTS,
    META_CHECK,
    META_CHECK_REQUEST,
    PAST_HEADING,
    SOLVER_PREAMBLE,
    TURN_HEADING,
    HistoryView,
    build_autogen,
    solver_stuck,
    trajectory_text,
)
from memarena.config_check import group_options
from memarena.core import (
    Completion,
    Env,
    EnvPrompt,
    Episode,
    Feedback,
    MemoryContext,
    Observation,
    Step,
    StepResult,
    Task,
    Usage,
)
from memarena.envs.fever import FeverEnv
from memarena.envs.wiki import smoke_wiki
from memarena.memory.episodic import StoredTask
from memarena.memory.gmemory.interaction import cut_count
from memarena.memory.gmemory.query_graph import RESOLVED, QueryNode
from memarena.memory.gmemory.render import render_solved
from memarena.memory.none import NoMemory
from memarena.pipeline.protocol import ProtocolSettings


class LineEnv(Env):
    """Reach ``target`` with "inc"; "wait" changes nothing. Named so its family is ``family``."""

    step_budget = 12

    def __init__(self, family: str = "line", target: int = 4):
        self.name = f"{family}_test"
        self.target = target

    def tasks(self, split):
        return [Task("t0", self.name, split, "d", "reach the end", {})]

    def domains(self):
        return ["d"]

    def prompt(self, task=None):
        return EnvPrompt(system="Move along a line.", action_format="One action.", fewshot=["ex"])

    def open(self, task):
        return LineEpisode(task, self.target)

    def close(self):
        pass


class LineEpisode(Episode):
    def __init__(self, task, target):
        self.task, self.target, self.n = task, target, 0

    def reset(self):
        return Observation("at 0", self.task.goal, ["inc", "wait"])

    def step(self, action):
        self.n += action == "inc"
        done = self.n >= self.target
        obs = Observation(f"at {self.n}", self.task.goal, ["inc", "wait"])
        return StepResult(obs, float(done), done, done, self.n / self.target, Feedback(True, True))


class Scripted:
    """A backbone double: the solver always waits; the helper moves on; a meta-check request
    gets a think: line. Keeps every request it was sent."""

    def __init__(self, name="double"):
        self.name, self.usage, self.requests = name, Usage(), []

    def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            user = r.messages[-1]["content"]
            if META_CHECK_REQUEST in user:
                out.append(Completion("think: moved some, more to go; next inc", 5, 5))
            elif r.messages[0]["content"].startswith(HELPER_PREAMBLE):
                out.append(Completion("inc", 5, 1))
            else:
                out.append(Completion("wait", 5, 1))
        return out

    def close(self):
        pass


def _run(env, backbone, loop="gmemory_autogen", budget=12):
    settings = RunnerSettings(
        step_budget=budget, action_mode="free", agent_loop=loop, history_steps=None, stop=("\n",)
    )
    runner = EpisodeRunner(env, as_policy(backbone), NoMemory(), settings, progress_bar=False)
    return runner.run(env.tasks("test"))[0]


def test_the_helper_fires_on_the_third_identical_action_and_not_before():
    assert not solver_stuck([], "wait") and not solver_stuck(["wait"], "wait")
    assert not solver_stuck(["inc", "wait"], "wait") and solver_stuck(["wait", "wait"], "wait")
    assert not solver_stuck(["wait", "wait"], "Wait")  # exact text, as the released check
    bb = Scripted()
    result = _run(LineEnv(target=2), bb)
    steps = result.trajectory.steps
    # solver waits twice; the third wait hands the turn to the helper, whose inc is executed
    assert [(s.action, s.agent) for s in steps[:3]] == [
        ("wait", None),
        ("wait", None),
        ("inc", HELPER),
    ]
    # after the helper's inc the history is wait, inc: two more waits before it fires again
    assert [s.agent for s in steps[3:6]] == [None, None, HELPER]
    assert result.outcome.success and result.outcome.steps == 6  # no extra step per turn
    assert result.outcome.helper_turns == 2
    # the helper saw the solver's user message whole, under its own preamble
    helper = [r for r in bb.requests if r.messages[0]["content"].startswith(HELPER_PREAMBLE)]
    solver = [r for r in bb.requests if r.messages[0]["content"].startswith(SOLVER_PREAMBLE)]
    assert len(helper) == 2 and helper[0].messages[1] == solver[2].messages[1]
    assert helper[0].messages[0]["content"].endswith("Move along a line.")


def test_memarena_loop_has_no_helper():
    result = _run(LineEnv(target=2), Scripted(), loop="memarena", budget=5)
    assert result.outcome.helper_turns == 0 and not result.outcome.success
    assert all(s.agent is None for s in result.trajectory.steps)


def _memory():
    return MemoryContext(
        slots={"past_successes": "PAST-EPISODE-TEXT", "insights": "1. INSIGHT-TEXT"},
        memory_ids=["a", "b"],
    )


def _prompt(loop, memory, family="pddl", history=(), view=None):
    task = Task("t", "x", "test", "d", "stack the blocks", {})
    env_prompt = EnvPrompt(system="ENV-INSTRUCTIONS", action_format="", fewshot=["SHOT-ONE"])
    return build_autogen(
        env_prompt,
        task,
        Observation("state", task.goal, None),
        list(history),
        memory,
        layout=LAYOUTS[loop],
        family=family,
        initial_observation="INITIAL-STATE",
        examples=None,
        show_actions=False,
        view=view or HistoryView(),
    )


@pytest.mark.parametrize("loop", ["gmemory_autogen", "memco_autogen"])
def test_prompt_sections_come_in_the_released_order(loop):
    messages, spans = _prompt(loop, _memory())
    assert len(messages) == 2
    assert messages[0]["content"] == f"{SOLVER_PREAMBLE}\nENV-INSTRUCTIONS"
    user = messages[1]["content"]
    order = [
        EXAMPLES_HEADING,
        "SHOT-ONE",
        PAST_HEADING,
        "PAST-EPISODE-TEXT",
        INSIGHTS_HEADING,
        "INSIGHT-TEXT",
        *([HOW_TO_USE_HEADING] if loop == "memco_autogen" else []),
        TURN_HEADING,
        "Your task: stack the blocks",
        "INITIAL-STATE",
    ]
    positions = [user.index(text) for text in order]
    assert positions == sorted(positions)
    assert (HOW_TO_USE_HEADING in user) == (loop == "memco_autogen")
    for span in spans:  # the recorded offsets hold the slot's text
        assert user[span.start : span.end] == _memory().slots[span.slot]


def test_empty_sections_are_printed_by_gmemory_and_left_out_by_memco():
    gm = _prompt("gmemory_autogen", MemoryContext.empty())[0][1]["content"]
    mc = _prompt("memco_autogen", MemoryContext.empty())[0][1]["content"]
    assert PAST_HEADING in gm and INSIGHTS_HEADING in gm
    assert PAST_HEADING not in mc and INSIGHTS_HEADING not in mc
    assert "planning advice" in mc  # PDDL's how-to block (the env family picks it)


def test_the_whole_trajectory_and_a_long_observation_arrive_whole():
    long = "word " * 400  # 2,000 characters
    steps = [Step("look", long.strip(), 0.0, 0.0, Feedback(True, True)), _step("go", "there")]
    user = _prompt("gmemory_autogen", _memory(), history=steps)[0][1]["content"]
    assert long.strip() in user
    assert user.endswith("INITIAL-STATE\n\n>look\n" + long.strip() + "\n>go\nthere\n>")
    # and in shown memory: G-Memory's solved task and the parity baselines' stored task
    node = QueryNode(
        id="q", goal="g", status=RESOLVED, domain="d", initial="start", steps=[("look", long)]
    )
    assert long.strip() in render_solved(node, chars=None)
    assert long.strip() not in render_solved(node, chars=160)
    assert cut_count(["start", long], None) == 0 and cut_count(["start", long], 160) == 1
    stored = StoredTask(id="s", goal="g", success=True, steps=[("look", long, True)])
    assert long.strip() in stored.render(None) and long.strip() not in stored.render(300)


def _step(action, observation):
    return Step(action, observation, 0.0, 0.0, Feedback(True, True))


def test_memco_scienceworld_compaction():
    steps = [_step(f"act {i}", f"line one\n   line  two {i} " + "x" * 600) for i in range(9)]
    text = trajectory_text("TASK", steps, HistoryView(keep=6, observation_chars=520))
    assert text.startswith("TASK\n\n>[... 3 earlier steps left out ...]\nact 3\n")
    assert "act 2" not in text and text.count("\n>") == 7
    kept = text.split("\n")[4]
    assert kept.startswith("line one line two 3 x") and kept.endswith("...")
    assert len(kept) == 523  # 520 characters and the ellipsis


def test_meta_check_adds_a_think_step_that_uses_no_budget():
    bb = Scripted(name="gpt-4o-mini")
    result = _run(LineEnv("alfworld", target=50), bb, loop="memco_autogen", budget=11)
    steps = result.trajectory.steps
    meta = [k for k, s in enumerate(steps) if s.agent == META_CHECK]
    assert meta == [5, 11]  # after env steps 5 and 10
    assert steps[5].action.startswith("think:") and steps[5].observation == "OK."
    assert result.outcome.steps == 11 and len(steps) == 13  # the budget counts env steps
    # the thought joins the trajectory the next prompt shows, and not the stuck check
    after = bb.requests[bb.requests.index(_meta_request(bb)) + 1].messages[1]["content"]
    assert "think: moved some" in after
    # another model, or G-Memory's loop, makes no meta-check
    for name, loop in (("qwen3-32b", "memco_autogen"), ("gpt-4o-mini", "gmemory_autogen")):
        other = _run(LineEnv("alfworld", target=50), Scripted(name), loop=loop, budget=11)
        assert all(s.agent != META_CHECK for s in other.trajectory.steps)


def _meta_request(bb):
    return next(r for r in bb.requests if META_CHECK_REQUEST in r.messages[-1]["content"])


class ThinkingBackbone:
    """Thinks, then searches the gold page, then finishes (ReAct's released format)."""

    name = "thinking-double"

    def __init__(self):
        self.usage, self.requests = Usage(), []

    def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            user = r.messages[-1]["content"]
            n = user.split(TURN_HEADING)[1].count("\n>") - 1  # steps taken so far
            text = ["Thought 1: I should search the subject.", None, "Finish[SUPPORTS]"][min(n, 2)]
            out.append(Completion(text or self.search, 5, 5))
        return out

    def close(self):
        pass


def test_a_fever_thought_is_a_step_answered_ok_and_counts_against_the_budget():
    env = FeverEnv(wiki=smoke_wiki(), fewshot=3, search_sentences="lead")
    task = env.tasks("test")[0]
    bb = ThinkingBackbone()
    bb.search = f"Search[{task.payload['gold_titles'][0]}]"
    result = _run_tasks(env, bb, [task])
    steps = result.trajectory.steps
    assert steps[0].action.startswith("Thought 1") and steps[0].observation == "OK."
    assert steps[1].action == bb.search and steps[1].feedback.state_changed
    assert result.outcome.steps == 3  # the thought used a step of the budget
    prompt = bb.requests[1].messages
    assert prompt[0]["content"].endswith(env.released_system)
    assert "Thought 1: I should search the subject.\nOK.\n>" in prompt[1]["content"]
    assert all(shot in prompt[1]["content"] for shot in env.released_fewshot)
    budget = _run_tasks(env, bb, [task], budget=1)
    assert budget.outcome.status == "budget" and budget.outcome.steps == 1


def _run_tasks(env, bb, tasks, budget=15):
    settings = RunnerSettings(
        step_budget=budget, action_mode="free", agent_loop="gmemory_autogen", stop=("\n",)
    )
    runner = EpisodeRunner(env, as_policy(bb), NoMemory(), settings, progress_bar=False)
    return runner.run(tasks)[0]


def test_search_lead_shows_the_whole_lead_section():
    from memarena.envs.wiki.backends import SearchResult
    from memarena.envs.wiki.react import search_observation

    text = "First para one. Two.\nSecond lead para.\n\nHistory\nLater section."
    result = SearchResult(query="x", found=True, title="X", text=text, similar=[])
    assert search_observation(result, "lead") == "First para one. Two.\nSecond lead para."
    assert search_observation(result, 1) == "First para one."


PAPER = [e for e in group_options(CONF, "experiment") if e.startswith(("memco_", "evograph_"))]


@pytest.mark.parametrize("experiment", PAPER)
def test_paper_experiments_choose_the_released_loop(experiment):
    cfg = compose_cfg([f"experiment={experiment}"])
    expected = "memco_autogen" if experiment.startswith("memco_") else "gmemory_autogen"
    assert cfg.protocol.agent_loop == expected
    if experiment.startswith("evograph_") and cfg.env._target_.endswith("PDDLEnv"):
        assert list(cfg.env.domains) == ["barman", "blocksworld", "gripper", "tyreworld"]
    if experiment.startswith("evograph_") and cfg.env._target_.endswith(("FeverEnv", "QAEnv")):
        assert cfg.protocol.step_budget == 15 and cfg.env.search_sentences == "lead"


def test_online_pddl_stream_runs_barman_first():
    from hydra.utils import instantiate

    cfg = compose_cfg(["experiment=evograph_table1_pddl", "env.require_data=false"])
    env = instantiate(cfg.env, n_test=2, n_train=0)
    assert [t.domain for t in env.tasks("test")] == [
        "barman", "barman", "blocksworld", "blocksworld",
        "gripper", "gripper", "tyreworld", "tyreworld",
    ]  # fmt: skip
    memco = compose_cfg(["experiment=memco_table1_pddl"])
    assert list(memco.env.domains)[0] == "gripper"  # MemCo's lists: gripper first


def test_memco_fever_gives_each_method_its_scripts_budget():
    cfg = compose_cfg(["experiment=memco_table1_fever"])
    protocol = ProtocolSettings.from_config(cfg.protocol)
    assert protocol.budget_for("memco") == 12 and protocol.budget_for("icl") == 30
    assert ProtocolSettings().budget_for("memco") is None


def test_embedded_model_run_of_evograph_records_the_helper_where_it_repeats(tmp_path):
    """EvoGraph's Table 1 PDDL cell (no memory) with the embedded SmolLM2 as the agent and a
    fresh call cache: the model repeats itself, the helper takes those turns, and the records,
    metrics.json and each step's prompt say which agent chose the step."""
    import json

    from conftest import run_py

    proc = run_py(
        ["experiment=evograph_table1_pddl", "method=none", "backbone=smollm2_135m",
         "env.require_data=false", "protocol.max_eval_tasks=2", "protocol.step_budget=6",
         "protocol.record_prompts=true", "logger=none", f"paths.results_dir={tmp_path}"],
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (metrics_file,) = tmp_path.rglob("metrics.json")
    metrics = json.loads(metrics_file.read_text())
    records = [json.loads(x) for x in (metrics_file.parent / "episodes.jsonl").open()]
    assert [r["domain"] for r in records] == ["barman", "blocksworld"]  # G-Memory's order
    helped = 0
    for record in records:
        steps = record["trajectory"]["steps"]
        mine = [k for k, s in enumerate(steps) if s.get("agent") == HELPER]
        assert record.get("helper_turns", 0) == len(mine)
        helped += len(mine)
        for k, step in enumerate(steps):
            system = step["prompt"][0]["content"]
            assert system.startswith(HELPER_PREAMBLE if k in mine else SOLVER_PREAMBLE)
            if k in mine:  # the solver's proposal equalled the last two executed actions
                assert k >= 2 and steps[k - 1]["action"] == steps[k - 2]["action"]
        user = steps[0]["prompt"][1]["content"]
        headings = (EXAMPLES_HEADING, PAST_HEADING, INSIGHTS_HEADING, TURN_HEADING)
        assert [user.index(h) for h in headings] == sorted(user.index(h) for h in headings)
    assert helped > 0 and metrics["helper_turns"] == helped
