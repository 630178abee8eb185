"""The conversation prompt format: append-only, its history cut rule, BFCL's user turns and
native tool calls through the runner."""

from __future__ import annotations

import pytest

from memarena.agent import EpisodeRunner, RunnerSettings
from memarena.agent.policy import ExpertPolicy
from memarena.agent.prompts import Conversation
from memarena.core import EnvPrompt, MemoryContext, Observation, Task, parse_tool_calls
from memarena.memory.none import NoMemory

TASK = Task("t", "e", "test", "d", "reach 3")
PROMPT = EnvPrompt(system="sys", action_format="Reply with one action.", fewshot=["ex 1"])


def _observation(i: int, request: bool = False) -> Observation:
    return Observation(f"obs {i}", "reach 3", user_turn=request)


def _conversation(window: int | None) -> Conversation:
    return Conversation.start(
        PROMPT, TASK, _observation(0), MemoryContext({"m": "memory slot"}, ["m0"]),
        show_actions=False, history_steps=window,
    )  # fmt: skip


def test_the_first_user_message_holds_the_stable_parts():
    messages = _conversation(4).messages()
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    for part in ("ex 1", "memory slot", "Your task: reach 3", "obs 0", "Reply with one action."):
        assert part in text


@pytest.mark.parametrize(
    ("steps", "first"), [(1, 0), (4, 0), (5, 2), (6, 2), (7, 4), (8, 4), (9, 6)]
)
def test_history_is_cut_in_blocks_of_half_the_window(steps, first):
    conv = _conversation(4)
    for i in range(1, steps + 1):
        conv.add_step(f"act {i}", _observation(i), None, show_actions=False)
    assert conv.first_shown() == first
    shown = [m["content"] for m in conv.messages() if m["role"] == "assistant"]
    assert shown == [f"act {i}" for i in range(first + 1, steps + 1)]


def test_within_a_block_each_prompt_extends_the_previous_one():
    conv = _conversation(4)
    prompts = []
    for i in range(1, 10):
        conv.add_step(f"act {i}", _observation(i), None, show_actions=False)
        prompts.append(conv.messages())
    pairs = zip(prompts, prompts[1:], strict=False)
    extended = [later[: len(earlier)] == earlier for earlier, later in pairs]
    # a cut happens when the step count passes 4, 6 and 8 (steps 5, 7, 9)
    assert extended == [True, True, True, False, True, False, True, False]


def test_a_cut_keeps_every_user_request_and_says_what_it_left_out():
    conv = _conversation(2)
    for i in range(1, 8):
        conv.add_step(f"act {i}", _observation(i, request=i in (2, 3)), None, show_actions=False)
    messages = conv.messages()
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert "obs 2" in users[0] and "obs 3" in users[0]  # merged after the first user message
    assert "(5 earlier steps are not shown.)" in users[0]
    assert not any(f"obs {i}" in "\n".join(users) for i in (1, 4, 5))
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["act 6", "act 7"]


def test_per_step_memory_and_valid_actions_go_into_the_newest_user_message():
    conv = _conversation(None)
    obs = Observation("obs 1", "g", admissible_actions=["a", "b"])
    conv.add_step("act 1", obs, MemoryContext({"m": "step hint"}, ["m1"]), show_actions=True)
    last = conv.messages()[-1]
    assert last["role"] == "user"
    assert last["content"] == "obs 1\n\nstep hint\n\nValid actions: a; b"


def test_native_tool_replies_get_one_tool_message_per_call():
    conv = Conversation.start(
        PROMPT, TASK, _observation(0), MemoryContext.empty(), show_actions=False,
        native_tools=True,
    )  # fmt: skip
    reply = (
        '<tool_call>{"name": "ls", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "cd", "arguments": {"folder": "x"}}</tool_call>'
    )
    conv.add_step(reply, Observation("ls() -> a\ncd() -> ok", "g", tool_results=["a", "ok"]),
                  None, show_actions=False)  # fmt: skip
    conv.add_step("NEXT", Observation("User: now b", "g", user_turn=True), None,
                  show_actions=False)  # fmt: skip
    roles = [m["role"] for m in conv.messages()]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    said, first, second = conv.messages()[2:5]
    assert [c["function"]["name"] for c in said["tool_calls"]] == ["ls", "cd"]
    assert said["tool_calls"][1]["function"]["arguments"] == {"folder": "x"}
    assert [first["tool_call_id"], second["tool_call_id"]] == [c["id"] for c in said["tool_calls"]]
    assert [first["content"], second["content"]] == ["a", "ok"]


# -- BFCL through the runner --------------------------------------------------------------------
class ExtraStepsExpert(ExpertPolicy):
    """The expert, but in turn 2, after its calls, it checks the time four times (extra
    steps that change nothing) before it hands the turn back."""

    def decide(self, decisions):
        out = super().decide(decisions)
        for k, d in enumerate(decisions):
            if d.episode.turn == 1 and 1 <= d.episode.turn_steps <= 4:
                out[k].text = '<tool_call>{"name": "get_current_time", "arguments": {}}</tool_call>'
        return out


@pytest.fixture(scope="module")
def six_turn_task():
    from memarena.envs.bfcl import BfclEnv

    env = BfclEnv(categories=["multi_turn_base"])
    task = next(t for t in env.tasks("test") if len(t.payload["turns"]) == 6)
    return env, task


def _run(env, task, prompt_format):
    settings = RunnerSettings(
        concurrency=1, step_budget=30, history_steps=4, action_mode="free",
        record_prompts=True, prompt_format=prompt_format,
    )  # fmt: skip
    runner = EpisodeRunner(env, ExtraStepsExpert(epsilon=0.0), NoMemory(), settings,
                           progress_bar=False)  # fmt: skip
    (result,) = runner.run([task])
    return result


def test_bfcl_every_user_request_stays_in_the_conversation(six_turn_task):
    env, task = six_turn_task
    result = _run(env, task, "conversation")
    assert result.outcome.success, result.outcome
    turns = task.payload["turns"]
    steps = result.trajectory.steps
    assert len(steps) >= 16  # 6 turns of calls + NEXT, and four extra steps in turn 2
    arrived = 1
    cut = False
    for step in steps:
        users = "\n".join(m["content"] for m in step.prompt if m["role"] == "user")
        assert all(turn in users for turn in turns[:arrived]), f"a request is missing: {arrived}"
        assert not any(turn in users for turn in turns[arrived:])
        cut = cut or "earlier steps are not shown" in users
        if step.action == "NEXT":
            arrived += 1
    assert cut  # the history was cut, and the requests survived it


def test_bfcl_single_format_loses_an_early_request_after_extra_steps(six_turn_task):
    """Why the conversation format exists: the single format's sliding window drops turn 2's
    request once the agent takes more steps in that turn than the window holds."""
    env, task = six_turn_task
    steps = _run(env, task, "single").trajectory.steps
    turn2 = task.payload["turns"][1]
    shown = [turn2 in s.prompt[1]["content"] for s in steps]
    assert shown[2] and not all(shown[2:7])


def test_bfcl_native_tool_calls_go_through_the_scripted_run(six_turn_task):
    env, task = six_turn_task
    result = _run(env, task, "conversation")
    last = result.trajectory.steps[-1].prompt
    assert "Available functions" not in last[0]["content"]  # the tools travel natively
    calls = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    tools = [m for m in last if m["role"] == "tool"]
    assert calls and tools
    ids = {c["id"] for m in calls for c in m["tool_calls"]}
    assert {m["tool_call_id"] for m in tools} <= ids
    # the expert's call lists were sent as <tool_call> blocks and executed by the env
    first = result.trajectory.steps[0]
    assert parse_tool_calls(first.raw_output)[1]
    assert first.feedback.valid_action and first.action.startswith("[")


class _Recording:
    """Keeps the requests a backbone is sent (and the prompt text it renders for them)."""

    def __init__(self, inner):
        self.inner, self.requests, self.rendered = inner, [], []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def generate(self, requests):
        self.requests.extend(requests)
        self.rendered.extend(self.inner.tokenizer.decode(self.inner.encode_prompt(r))
                             for r in requests)  # fmt: skip
        return self.inner.generate(requests)


def test_bfcl_smollm2_run_goes_through_the_native_tool_path():
    import tempfile
    from pathlib import Path

    from memarena.agent.policy import LLMPolicy
    from memarena.envs.bfcl import BfclEnv
    from memarena.llm.hf import HFBackbone

    env = BfclEnv(categories=["multi_turn_base"], doc_format="compact")
    task = min(env.tasks("test"), key=lambda t: len(t.payload["functions"]))
    backbone = HFBackbone(  # the embedded preset's engine settings (4-bit decode steps)
        device="cpu", dtype="float32", cache_path=None, tools_template="hermes",
        converted_dir=Path(tempfile.gettempdir()) / "memarena-test-models", decode_weights="int4",
    )  # fmt: skip
    recording = _Recording(backbone)
    try:
        assert backbone.native_tools
        settings = RunnerSettings(concurrency=1, step_budget=2, action_mode="free",
                                  max_tokens=48, record_prompts=True)  # fmt: skip
        runner = EpisodeRunner(env, LLMPolicy(recording), NoMemory(), settings,
                               progress_bar=False)  # fmt: skip
        (result,) = runner.run([task])
    finally:
        backbone.close()
    assert result.outcome.status != "error", result.outcome.error
    names = [d["name"] for d in task.payload["functions"]]
    assert recording.requests and all(r.tools for r in recording.requests)
    assert [t["function"]["name"] for t in recording.requests[0].tools] == names
    for text in recording.rendered:  # the chat template lists the tools, the system text not
        assert "<tools>" in text and all(name in text for name in names)
        assert "Available functions" not in text
    steps = result.trajectory.steps
    assert steps and all(s.prompt[0]["content"] == recording.requests[0].messages[0]["content"]
                         for s in steps)  # fmt: skip
    # each later prompt extends the one before (append-only: the engine reuses the prefix)
    for earlier, later in zip(recording.requests, recording.requests[1:], strict=False):
        assert later.messages[: len(earlier.messages)] == earlier.messages
    assert backbone.usage.reused_prompt_tokens > 0 or len(steps) == 1


def test_unchanged_per_step_memory_is_not_repeated_while_it_is_in_view():
    conv = _conversation(2)  # the first message shows slot "m": "memory slot"
    same, new = MemoryContext({"m": "memory slot"}, ["m0"]), MemoryContext({"m": "hint B"}, ["m1"])
    conv.add_step("act 1", _observation(1), same, show_actions=False)
    conv.add_step("act 2", _observation(2), new, show_actions=False)
    conv.add_step("act 3", _observation(3), new, show_actions=False)
    users = [m["content"] for m in conv.messages() if m["role"] == "user"]
    assert users[-2:] == ["obs 2\n\nhint B", "obs 3"]  # shown once, then in view
    # step 2 (which showed "hint B") is cut from the prompt: the slot is shown again
    for i in (4, 5):
        conv.add_step(f"act {i}", _observation(i), new, show_actions=False)
    assert conv.first_shown() == 3
    assert [m["content"] for m in conv.messages()][-1] == "obs 5"
    assert any("hint B" in m["content"] for m in conv.messages()[2:])


def test_single_format_with_no_history_limit_shows_every_step():
    from memarena.agent.prompts import build_messages
    from memarena.core import Feedback, Step

    steps = [Step(f"act {i}", f"obs {i}", 0.0, 0.0, Feedback(True, True)) for i in range(1, 13)]
    kwargs = dict(initial_observation="obs 0", show_actions=False)
    every = build_messages(PROMPT, TASK, _observation(12), steps, MemoryContext.empty(),
                           history_steps=None, **kwargs)[1]["content"]  # fmt: skip
    last3 = build_messages(PROMPT, TASK, _observation(12), steps, MemoryContext.empty(),
                           history_steps=3, **kwargs)[1]["content"]  # fmt: skip
    assert all(f"> act {i}\n" in every for i in range(1, 13)) and "omitted" not in every
    assert "(earlier 9 steps omitted)" in last3 and "> act 9\n" not in last3
