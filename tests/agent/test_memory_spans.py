"""Where the prompt builder puts each memory slot (``MemorySpan``): the offsets it returns with
the messages cut exactly the slot's text out of the message, in both prompt formats, after a
history cut that merges kept user requests, and through the runner into the step record."""

from __future__ import annotations

from test_runner import CountEnv, QueryLog, RecordingBackbone

from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.agent.prompts import Conversation, build_single
from memarena.core import EnvPrompt, Feedback, MemoryContext, Observation, Step, Task

TASK = Task("t", "e", "test", "d", "reach 3")
PROMPT = EnvPrompt(system="sys", action_format="Reply with one action.", fewshot=["ex 1"])
HEAD = MemoryContext({"a": "### A\nfirst slot", "b": "### B\nsecond slot"}, ["a1", "b1"])


def _cut(messages, spans):
    return [(s.slot, messages[s.message]["content"][s.start : s.end]) for s in spans]


def test_conversation_spans_cut_out_each_slot_in_the_head_and_in_step_messages():
    conv = Conversation.start(PROMPT, TASK, Observation("obs 0", "reach 3"), HEAD,
                              show_actions=False, history_steps=2)  # fmt: skip
    messages, spans = conv.prompt()
    assert _cut(messages, spans) == [("a", "### A\nfirst slot"), ("b", "### B\nsecond slot")]
    assert {s.message for s in spans} == {1}
    # a step memory goes into the step's user message, before the valid actions
    obs = Observation("obs 1", "g", admissible_actions=["x", "y"], user_turn=True)
    conv.add_step("act 1", obs, MemoryContext({"s": "step hint 1"}, ["s1"]), show_actions=True)
    messages, spans = conv.prompt()
    assert _cut(messages, spans)[-1] == ("s", "step hint 1")
    assert spans[-1].message == len(messages) - 1
    # past the window the step is cut; its user request (and its memory) is merged into the
    # first user message, the offsets moved with it
    for i in (2, 3, 4):
        conv.add_step(f"act {i}", Observation(f"obs {i}", "g"), None, show_actions=False)
    messages, spans = conv.prompt()
    assert conv.first_shown() > 0 and "(2 earlier steps are not shown.)" in messages[1]["content"]
    assert _cut(messages, spans) == [
        ("a", "### A\nfirst slot"),
        ("b", "### B\nsecond slot"),
        ("s", "step hint 1"),
    ]
    assert messages == conv.messages()


def test_single_format_spans_cut_out_each_slot():
    history = [Step("act 1", "obs 1", 0.0, 0.0, Feedback(True, True))]
    messages, spans = build_single(
        PROMPT, TASK, Observation("obs 1", "reach 3"), history, HEAD,
        initial_observation="obs 0", history_steps=None, show_actions=False,
    )  # fmt: skip
    assert _cut(messages, spans) == [("a", "### A\nfirst slot"), ("b", "### B\nsecond slot")]


def test_the_runner_records_the_spans_with_the_prompt():
    env, memory = CountEnv(), QueryLog()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), memory,
        RunnerSettings(concurrency=1, record_prompts=True), progress_bar=False,
    )  # fmt: skip
    (result,) = runner.run([env.tasks("test")[2]])  # target 3: three steps
    steps = result.trajectory.to_dict()["steps"]
    # each step's hint (a new text every step) sits where its span says, in that step's prompt
    for k, step in enumerate(steps):
        cut = [
            (s["slot"], step["prompt"][s["message"]]["content"][s["start"] : s["end"]])
            for s in step["memory_spans"]
        ]
        assert cut[-1] == ("m", f"hint {k + 1}"), (k, cut)
        assert len(cut) == k + 1  # the earlier hints are still in view, and marked
    # without record_prompts, no spans in the record
    runner.s.record_prompts = False
    (result,) = runner.run([env.tasks("test")[2]])
    assert all("memory_spans" not in s for s in result.trajectory.to_dict()["steps"])
