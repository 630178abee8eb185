"""What ReMe's summarizer is shown (issue 49 item 4): the released reading gives it the whole
conversation in merge_messages_content's per-message layout (reasoning, content, tool calls with
arguments, results unclipped), the task's tools at acquisition only, cut only to fit the
summarizer's context and counted; memarena's reading (summary_input: steps) still clips."""

from __future__ import annotations

import json

import numpy as np
import pytest
from doubles import FakeLLM

from memarena.core import (
    Feedback,
    MemoryServices,
    Outcome,
    Step,
    Task,
    Trajectory,
)
from memarena.core.json_budget import answer_tokens
from memarena.memory.reme import ReMe
from memarena.memory.reme import prompts as reme_prompts
from memarena.memory.reme import summarizer as summ

EMPTY = json.dumps({"experiences": []})
FUNCTIONS = [
    {
        "name": "ls",
        "description": "List the files of the current folder.",
        "parameters": {"type": "dict", "properties": {"a": {"type": "boolean"}}},
        "response": {"type": "dict", "properties": {"current_directory_content": {}}},
    }
]
REASONING = "The user wants the files, so I should list the folder first."
REPLY = (
    f"<think>{REASONING}</think>I will look at the folder.\n"
    '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call>'
)
# a tool result far over memarena's 300 characters, its end marked
RESULT = "ls(a=True) -> " + " ".join(f"file_{i}.txt" for i in range(60)) + " END_OF_RESULT"


class OneEmbedder:
    name = "one"

    def encode(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32)


def _trajectory(success: bool = True, result: str = RESULT) -> tuple[Trajectory, Outcome]:
    task = Task("bfcl/t1", "bfcl", "train", "d", "User: list my files", {"functions": FUNCTIONS})
    steps = [
        Step("[ls(a=True)]", result, 0.0, 0.5, Feedback(True, True), raw_output=REPLY),
        Step("NEXT", "User: now delete them", 0.0, 0.5, Feedback(True, False), raw_output="Done."),
    ]
    status = "success" if success else "failure"
    return Trajectory(task, "User: list my files", steps), Outcome(
        success, float(success), 2, status
    )


def _reme(llm: FakeLLM, **kw) -> ReMe:
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=OneEmbedder)
    return ReMe(services=services, judge=False, generalize_queries=False, **kw)


def _summary_prompts(llm: FakeLLM) -> list[str]:
    return [r.messages[-1]["content"] for r in llm.requests if "experiences" in str(r.json_schema)]


def test_the_released_reading_shows_the_whole_conversation_in_the_per_message_layout():
    llm = FakeLLM(default=EMPTY)
    memory = _reme(llm)
    memory.observe_groups([[_trajectory()]])
    (prompt,) = _summary_prompts(llm)
    # one block per message, numbered from 0: user, assistant, tool, assistant, user
    heads = [
        "### step 0, role: user, content:\nUser: list my files",
        "### step 1, role: assistant, content:\n" + REASONING + "\n\nI will look at the folder.\n"
        ' - tool call: ls\n   arguments: {"a": true}\n',
        "### step 2, role: tool, tool call result:\n" + RESULT + "\n",
        "### step 3, role: assistant, content:\n\n\nDone.\n",
        "### step 4, role: user, content:\nUser: now delete them\n",
    ]
    at = [prompt.index(h) for h in heads]
    assert at == sorted(at)
    assert "<think>" not in prompt and '{"name": "ls", "arguments"' not in prompt  # read, not raw
    assert "Step 1:" not in prompt and "Outcome:" not in prompt
    assert memory.metrics()["memory_summary_inputs_cut"] == 0
    assert "reme_summary_input_cut" not in memory.fallbacks


def test_the_tools_join_the_first_user_message_at_acquisition_only():
    llm = FakeLLM(default=EMPTY)
    memory = _reme(llm)
    memory.observe_groups([[_trajectory()]])
    (acquired,) = _summary_prompts(llm)
    tools = acquired[acquired.index("# Tools") : acquired.index("### step 1")]
    assert acquired.index("User: list my files") < acquired.index("# Tools")
    assert '"name": "ls"' in tools and "<tools>" in tools and "</tools>" in tools
    assert "<tool_call>" in tools and "response" not in tools  # the response document dropped
    assert '"type": "object"' in tools  # BFCL's dict as a JSON-schema object
    # evaluation: a successful trial's summary and a failed trial's failure analysis (the
    # lessons of its retry) are the online summaries: no tools block
    llm.requests.clear()
    memory.begin_phase("eval")
    memory.observe_groups([[_trajectory()]])
    memory.reflect([_trajectory(success=False)], attempt=1)
    online = _summary_prompts(llm)
    assert len(online) == 2
    for prompt in online:
        assert "# Tools" not in prompt and "<tools>" not in prompt
        assert RESULT in prompt and REASONING in prompt


def test_an_input_beyond_the_context_is_cut_and_counted():
    llm = FakeLLM(default=EMPTY)
    cap = 100  # the summarize reply cap: what the fit leaves free for the answer
    room = 1500  # characters the trajectory may take
    llm.context_limit = (room + summ.FRAME_CHARS) // summ.CHARS_PER_TOKEN + cap + 64
    long_result = "ls(a=True) -> " + "x" * 5000 + " END_OF_RESULT"
    memory = _reme(llm, max_tokens={"summarize": cap}, summary_context_tokens=10**6)
    memory.observe_groups([[_trajectory(result=long_result)]])
    (prompt,) = _summary_prompts(llm)
    assert memory._summary_context_tokens() == llm.context_limit  # lowered to the backbone's
    assert long_result not in prompt and "END_OF_RESULT" in prompt  # its middle went
    assert "characters cut to fit the context" in prompt
    for i, role in enumerate(["user", "assistant", "tool", "assistant", "user"]):
        assert f"### step {i}, role: {role}" in prompt  # every message stays
    frame = len(reme_prompts.SUCCESS.format(trajectory="", limit=3, fields=reme_prompts.FIELDS))
    assert len(prompt) - frame <= room
    assert memory.metrics()["memory_summary_inputs_cut"] == 1
    assert memory.fallbacks["reme_summary_input_cut"] == 1
    assert all(r.max_tokens == cap for r in llm.requests)


def test_a_cut_that_needs_more_than_clipping_leaves_out_the_middle():
    messages = [summ.Message("user", "task")] + [
        summ.Message("assistant" if i % 2 else "tool", f"m{i} " + "y" * 200) for i in range(40)
    ]
    text, cut = summ.fit_messages(messages, 1000)
    assert cut and len(text) <= 1000
    assert text.startswith("### step 0, role: user") and "the middle cut" in text
    whole, cut = summ.fit_messages(messages, 10**6)
    assert not cut and whole == summ.render_messages(messages)


def test_an_uncapped_answer_asks_for_what_the_context_leaves():
    llm = FakeLLM(default=EMPTY)
    llm.context_limit = 8192
    memory = _reme(llm)
    memory.observe_groups([[_trajectory()]])
    (request,) = llm.requests
    assert request.json_schema == reme_prompts.experiences_schema(3, None, None)
    assert "maxLength" not in json.dumps(request.json_schema["properties"]["experiences"]["items"]
                                         ["properties"]["experience"])  # fmt: skip
    used = summ.prompt_tokens(sum(len(m["content"]) for m in request.messages))
    assert request.max_tokens == 8192 - used


def test_memarenas_reading_still_clips():
    llm = FakeLLM(default=EMPTY)
    memory = _reme(llm, summary_input="steps", scenario_chars=200, experience_chars=400)
    memory.observe_groups([[_trajectory()]])
    (request,) = llm.requests
    prompt = request.messages[-1]["content"]
    assert "Step 1: [ls(a=True)] -> " in prompt and "Outcome: success" in prompt
    assert RESULT not in prompt and "END_OF_RESULT" not in prompt  # clipped to 300
    assert "### step" not in prompt and "# Tools" not in prompt and REASONING not in prompt
    assert request.json_schema == reme_prompts.experiences_schema(3)  # 200 / 400
    assert request.max_tokens == answer_tokens(request.json_schema)
    assert memory.readings["method.summary_input"] == "memarena"
    assert memory.readings["method.experience_chars"] == "memarena"


def test_the_released_reading_is_the_default():
    readings = _reme(FakeLLM()).readings
    for key in ("summary_input", "scenario_chars", "experience_chars"):
        assert readings[f"method.{key}"] == "released"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<think>a</think>b", ("a", "b")),
        ("a</think>b", ("a", "b")),  # the prompt opened the thinking block
        ("<think>a</think>b<think>c</think>d", ("a\n\nc", "bd")),
        ("plain", ("", "plain")),
    ],
)
def test_reasoning_is_split_from_the_reply(reply, expected):
    assert summ.split_reasoning(reply) == expected
