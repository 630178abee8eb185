"""LangMem through the real langmem package: the episode rendering, the chat-model adapter
(message conversion, reply constraint, tool calls, fallbacks, token accounting, lockstep
batching), the memory store manager's writes and updates, success-only addition, retrieval,
deterministic ids and the snapshot. Goals ``v:a,b,c`` embed as [a, b, c]
(:class:`doubles.FakeEmbedder`); stored episodes are indexed by their observation here
(``index_fields``) so that retrieval is worked by hand."""

from __future__ import annotations

import json
import uuid

import pytest
from baseline_helpers import episode, query, services
from doubles import FakeLLM
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from memarena.core import Completion, ConfigError, MemoryFrozenError
from memarena.llm.base import BackboneBase
from memarena.memory.langmem import Episode, LangMem, render_episode
from memarena.memory.langmem.chat_model import (
    FALLBACK,
    BackboneChatModel,
    Tool,
    ToolCallBridge,
    bounded,
    reply_schema,
    to_chat_messages,
)


def _episode(o: str) -> dict:
    return {"observation": o, "thoughts": f"t {o}", "action": f"a {o}", "result": f"r {o}"}


def _insert(*observations: str) -> str:
    return json.dumps({"calls": [{"tool": "Episode", "args": _episode(o)} for o in observations]})


def _memory(llm: FakeLLM, **kw) -> LangMem:
    return LangMem(services=services(llm), index_fields=["content.observation"], **kw)


def test_without_the_extra_the_run_stops_with_the_install_command(monkeypatch):
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "langmem" else found(name)
    )
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[langmem\]'"):
        _memory(FakeLLM())


# -- rendering and message conversion (no model) -----------------------------------------------
def test_an_episode_is_rendered_as_when_thought_did_result():
    value = {"kind": "Episode", "content": _episode("the door was locked")}
    assert render_episode(value) == (
        "When: the door was locked\nThought: t the door was locked\n"
        "Did: a the door was locked\nResult: r the door was locked"
    )
    # empty fields are left out
    assert render_episode({"content": {"observation": "x", "thoughts": " "}}) == "When: x"


def test_langchain_messages_become_alternating_chat_turns():
    call = {"name": "Episode", "args": {"observation": "o"}, "id": "c1"}
    messages = [
        SystemMessage("You are a memory subroutine."),
        HumanMessage("first"),
        HumanMessage("second"),  # merged with the first: chat templates want alternation
        AIMessage("", tool_calls=[call]),
        ToolMessage("bad arguments", tool_call_id="c1", name="Episode"),
        SystemMessage("late system text"),  # every system text goes first
    ]
    assert to_chat_messages(messages, extra_system="TOOLS") == [
        {"role": "system", "content": "You are a memory subroutine.\n\nlate system text\n\nTOOLS"},
        {"role": "user", "content": "first\n\nsecond"},
        {"role": "assistant",
         "content": '{"calls": [{"id": "c1", "tool": "Episode", "args": {"observation": "o"}}]}'},
        {"role": "user", "content": "Result of Episode call c1: bad arguments"},
    ]  # fmt: skip


def test_reply_constraints_bound_strings_lists_and_close_objects():
    episode_tool = Tool.of(Episode)
    assert episode_tool.name == "Episode" and "hindsight" in episode_tool.description
    # one candidate, one call: the bare arguments, every string bounded, the object closed
    single = reply_schema([episode_tool], max_calls=1, field_chars=50, max_items=2)
    assert single["required"] == ["observation", "thoughts", "action", "result"]
    assert single["additionalProperties"] is False
    assert all(p == {"type": "string", "maxLength": 50} for p in single["properties"].values())
    # two candidates: a list of 1..max_calls {tool, args}, one branch per tool
    patch = Tool("PatchDoc", "patch", {"type": "object", "properties": {
        "json_doc_id": {"type": "string"},
        "patches": {"type": "array", "items": {"$ref": "#/$defs/P"}}},
        "$defs": {"P": {"type": "object", "title": "P", "properties": {
            "op": {"enum": ["add", "replace"], "type": "string"}}}}})  # fmt: skip
    multi = reply_schema([patch, episode_tool], max_calls=3, field_chars=50, max_items=2)
    calls = multi["properties"]["calls"]
    assert (calls["minItems"], calls["maxItems"]) == (1, 3)
    branches = calls["items"]["anyOf"]
    assert [b["properties"]["tool"] for b in branches] == [{"enum": ["PatchDoc"]},
                                                           {"enum": ["Episode"]}]  # fmt: skip
    patches = branches[0]["properties"]["args"]["properties"]["patches"]
    # the $ref inlined, its title dropped, the enum left unbounded, the list bounded
    assert patches == {"type": "array", "maxItems": 2, "items": {
        "type": "object", "additionalProperties": False,
        "properties": {"op": {"enum": ["add", "replace"], "type": "string"}}}}  # fmt: skip
    assert bounded({"type": "string", "maxLength": 7}, 50, 2) == {"type": "string", "maxLength": 7}


# -- the chat-model adapter over a scripted backbone ---------------------------------------------
class _Account:
    def __init__(self) -> None:
        self.token_usage: dict = {}
        self.fallbacks: dict = {}


def _model(llm, **kw) -> tuple[BackboneChatModel, _Account]:
    account = _Account()
    return BackboneChatModel(bridge=ToolCallBridge(lambda: llm, account, **kw)), account


def test_a_bound_tool_call_is_one_constrained_request_and_an_ai_message_with_tool_calls():
    llm = FakeLLM([json.dumps(_episode("o"))])
    model, account = _model(llm, max_calls=1, field_chars=80)
    reply = model.bind_tools([Episode], tool_choice="Episode").invoke(
        [SystemMessage("sys"), HumanMessage("the session")]
    )
    (call,) = reply.tool_calls
    assert (call["name"], call["args"]) == ("Episode", _episode("o"))
    assert call["id"].startswith("call_")
    (request,) = llm.requests
    assert request.json_schema["properties"]["result"] == {"type": "string", "maxLength": 80}
    system, user = request.messages
    assert system["content"].startswith("sys\n\nTools you can call:\n- Episode: ")
    assert "reply with its arguments as one JSON object" in system["content"]
    assert user == {"role": "user", "content": "the session"}
    # the tokens of the call are the method's, under the purpose "extract"
    assert account.token_usage == {
        "extract": {"calls": 1, "requests": 1, "prompt_tokens": 10, "completion_tokens": 3}
    }
    assert reply.usage_metadata["total_tokens"] == 13


def test_several_tools_ask_for_a_calls_list_and_an_update_is_counted_as_such():
    patch = {"json_doc_id": "d1", "planned_edits": "p",
             "patches": [{"op": "replace", "path": "/result", "value": "v"}]}  # fmt: skip
    answer = {"calls": [{"tool": "PatchDoc", "args": patch},
                        {"tool": "Episode", "args": _episode("n")}]}  # fmt: skip
    llm = FakeLLM([json.dumps(answer)])
    model, account = _model(llm, max_calls=2)
    from trustcall._base import PatchDoc

    reply = model.bind_tools([PatchDoc, Episode], tool_choice="any").invoke("x")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("PatchDoc", patch),
        ("Episode", _episode("n")),
    ]
    assert len({c["id"] for c in reply.tool_calls}) == 2
    assert list(account.token_usage) == ["update"]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"calls": []}),  # no call
        json.dumps({"calls": [{"tool": "Nope", "args": {}}]}),  # a tool that is not bound
    ],
)
def test_an_unusable_reply_is_a_counted_fallback_without_tool_calls(text):
    llm = FakeLLM([text])
    model, account = _model(llm, max_calls=2)
    reply = model.bind_tools([Episode]).invoke("x")
    assert reply.tool_calls == [] and reply.content == ""
    assert account.fallbacks == {FALLBACK: 1}
    assert llm.usage.fallbacks == {FALLBACK: 1}  # on the backbone too
    assert account.token_usage["extract"]["requests"] == 1  # its tokens still count


class _ScriptedBackbone(BackboneBase):
    """A real BackboneBase (constraint checks, usage) answering scripted texts."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__(name="scripted-text", cache_model="scripted-text", cache_path=None)
        self.answers = list(answers)

    def _generate(self, requests):
        return [Completion(self.answers.pop(0), prompt_tokens=5, completion_tokens=2)
                for _ in requests]  # fmt: skip


def test_a_reply_that_breaks_the_schema_is_flagged_by_the_backbone_and_counted():
    # valid JSON, but a field over its bound: BackboneBase marks json_invalid, the adapter
    # counts its own fallback and returns no call
    long = {**_episode("o"), "result": "r" * 81}
    backbone = _ScriptedBackbone([json.dumps(long)])
    model, account = _model(backbone, max_calls=1, field_chars=80)
    reply = model.bind_tools([Episode]).invoke("x")
    assert reply.tool_calls == []
    assert backbone.usage.fallbacks == {"json_invalid": 1, FALLBACK: 1}
    assert account.fallbacks == {FALLBACK: 1}


# -- the method: LangMem's memory store manager on hand-built trajectories ------------------------
def test_a_wave_is_one_batched_call_and_writes_one_episode_per_trajectory():
    llm = FakeLLM([_insert("v:1,0,0"), _insert("v:0,1,0")])
    memory = _memory(llm)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    assert llm.batches == 1 and len(llm.requests) == 2  # both trajectories in one call
    assert memory.bridge.batcher.batches == 1
    values = sorted(item.value["content"]["observation"] for item in memory.items())
    assert values == ["v:0,1,0", "v:1,0,0"]
    assert all(item.value["kind"] == "Episode" for item in memory.items())
    assert memory.metrics() == {"memory_entries": 2, "memory_observed": 2, "memory_writes": 2,
                                "memory_updates": 0, "memory_deletes": 0}  # fmt: skip
    assert memory.token_usage["extract"] == {
        "calls": 1, "requests": 2, "prompt_tokens": 20, "completion_tokens": 6}  # fmt: skip
    # the manager read the trajectory: task, steps and outcome in LangMem's session block
    prompt = llm.requests[0].messages[-1]["content"]
    assert "<session_" in prompt and "Task: v:1,0,0" in prompt
    assert "a1" in prompt and "after a2" in prompt and "Outcome: solved after 3 steps." in prompt


def test_a_later_trajectory_sees_the_stored_episode_and_patches_it():
    llm = FakeLLM([_insert("v:1,0,0")])
    memory = _memory(llm)
    memory.observe(*episode("v:1,0,0", True, "t0"))
    (item,) = memory.items()
    # LangMem shows a stored item under uuid5(namespace + key)
    shown_id = uuid.uuid5(uuid.NAMESPACE_DNS, str((*item.namespace, item.key))).hex
    patch = {
        "json_doc_id": shown_id,
        "planned_edits": "sharpen the result",
        "patches": [{"op": "replace", "path": "/result", "value": "check the lock first"}],
    }
    llm.answers = [json.dumps({"calls": [{"tool": "PatchDoc", "args": patch}]})]
    memory.observe(*episode("v:1,0,0", True, "t1"))
    (updated,) = memory.items()
    assert updated.key == item.key  # same memory, new content
    assert updated.value["content"] == {**_episode("v:1,0,0"), "result": "check the lock first"}
    assert (memory.counts["writes"], memory.counts["updates"]) == (1, 1)
    request = llm.requests[-1]
    assert f"<instance id={shown_id}" in request.messages[0]["content"]
    assert memory.token_usage["update"]["requests"] == 1
    tools = request.json_schema["properties"]["calls"]["items"]["anyOf"]
    assert [t["properties"]["tool"]["enum"][0] for t in tools] == ["PatchDoc", "Episode"]


def test_only_successful_trajectories_are_added_and_failures_cost_nothing():
    llm = FakeLLM()
    memory = _memory(llm)
    memory.observe(*episode("v:1,0,0", False, "t0"))
    assert llm.requests == [] and memory.items() == [] and memory.clock == 1
    llm.answers = [_insert("v:1,0,0")]
    every = _memory(llm, success_only=False)
    every.observe(*episode("v:1,0,0", False, "t0"))
    assert len(every.items()) == 1
    assert (
        "Outcome: failed (progress 0.50) after 3 steps." in llm.requests[0].messages[-1]["content"]
    )


def test_a_malformed_reply_writes_nothing_and_is_counted():
    llm = FakeLLM(["{not json"])
    memory = _memory(llm)
    memory.observe(*episode("v:1,0,0", True, "t0"))
    assert memory.items() == [] and memory.fallbacks == {FALLBACK: 1}
    assert memory.counts["manager_errors"] == 0  # the manager itself ran to its end


def test_retrieval_shows_the_nearest_episode_by_the_task_goal():
    llm = FakeLLM([_insert("v:1,0,0"), _insert("v:0,1,0")])
    memory = _memory(llm)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    keys = {i.value["content"]["observation"]: i.key for i in memory.items()}
    # query [0.9, 0.1, 0]: cos 0.994 with [1,0,0], 0.110 with [0,1,0]
    contexts = memory.retrieve_batch([query("v:0.9,0.1,0"), query("v:0.1,0.9,0")])
    assert [c.memory_ids for c in contexts] == [[keys["v:1,0,0"]], [keys["v:0,1,0"]]]
    assert contexts[0].slots == {
        "langmem_episodes": "Episodes from your memory of similar tasks:\n\nWhen: v:1,0,0\n"
        "Thought: t v:1,0,0\nDid: a v:1,0,0\nResult: r v:1,0,0"
    }
    memory.top_k = 2
    assert memory.retrieve(query("v:0.9,0.1,0")).memory_ids == [keys["v:1,0,0"], keys["v:0,1,0"]]
    memory.freeze()
    with pytest.raises(MemoryFrozenError):
        memory.observe(*episode("v:1,0,0", True, "t2"))


def test_ids_and_prompts_are_the_same_on_a_rerun():
    """LangMem draws uuid4s for new keys and its session tag; here they come from the observed
    episode, so a rerun writes the same keys and asks the same prompts (the call cache replays)."""
    runs = []
    for _ in range(2):
        llm = FakeLLM([_insert("v:1,0,0")])
        memory = _memory(llm)
        memory.observe(*episode("v:1,0,0", True, "t0"))
        runs.append(([i.key for i in memory.items()], llm.requests[0].messages))
    assert runs[0] == runs[1]
    assert uuid.uuid4() != uuid.uuid4()  # the uuid module itself is left as it was


def test_snapshot_roundtrip(tmp_path):
    # the second reply writes two identical episodes (small models do): they load back too
    llm = FakeLLM([_insert("v:1,0,0"), _insert("v:0,1,0", "v:0,1,0")])
    memory = _memory(llm)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    assert len(memory.items()) == 3
    memory.save(tmp_path)
    again = _memory(FakeLLM())
    again.load(tmp_path)
    assert [(i.key, i.value) for i in again.items()] == [(i.key, i.value) for i in memory.items()]
    for goal in ("v:0.9,0.1,0", "v:0.2,0.8,0", "v:1,1,0"):
        assert again.retrieve(query(goal)) == memory.retrieve(query(goal))
    assert again.metrics() == memory.metrics() and again.clock == 2
    assert again.token_usage == memory.token_usage


def test_the_search_index_returns_what_the_store_search_returns():
    """SearchIndex (one matrix, built once per store change) against InMemoryStore.search on a
    store with two embedded fields per item, tied vectors, a zero vector and unembedded items."""
    import random

    from langchain_core.embeddings import Embeddings

    from memarena.memory.langmem.store import SearchIndex, new_store

    class Table(Embeddings):
        def __init__(self):
            self.rng, self.known = random.Random(4), {}

        def embed_documents(self, texts):
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text):
            if text not in self.known:  # a few texts share a vector: tied scores
                seed = text if not text.startswith("tie") else "tie"
                rng = random.Random(seed)
                self.known[text] = [rng.choice([0.0, 1.0, -1.0, 0.5]) for _ in range(4)]
            return self.known[text]

    ns = ("memories", "test")
    store = new_store(Table(), 4, ["a", "b"])
    for i in range(60):
        a = f"tie{i}" if i % 7 == 0 else f"a{i % 23}"
        store.put(ns, f"k{i:02d}", {"a": a, "b": f"b{i % 11}"}, index=None if i % 9 else False)
    store.put(ns, "zero", {"a": "zero"}, index=False)
    store._vectors[ns]["zero"] = {"a": [0.0, 0.0, 0.0, 0.0]}
    store.put(("other",), "x", {"a": "a1"})  # another namespace: not a candidate
    index, table = SearchIndex(store, ns), store.embeddings
    for q in ["a1", "a5", "tie3", "b2", "nothing", "a22"]:
        for k in (1, 3, 10, 70):
            expected = [item.key for item in store.search(ns, query=q, limit=k)]
            assert [item.key for item in index.search(table.embed_query(q), k)] == expected
