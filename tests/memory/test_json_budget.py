"""Reply budgets sized to each memory-LLM purpose (memarena.core.json_budget).

- the bound of small hand-written schemas equals the length of the longest valid instance,
  written out by hand, plus the end token; unbounded parts are named;
- every request of every memory method (built by the methods' own code, answered by a double
  that writes the longest valid answer one character per token and cuts at ``max_tokens`` as
  an engine does) has a finite bound, asks for exactly that bound (or the configured cap when
  smaller), and its longest answer arrives whole and parses;
- llguidance, under the hf engine's compact-JSON options, accepts each longest answer byte by
  byte (a one-byte-per-token vocabulary: tokens = characters, the assumption's worst case)
  and then allows only the end token: the answer stops as soon as the schema is complete.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from baseline_helpers import episode, query, services
from doubles import FakeEmbedder
from needs import need_module

from memarena.core import (
    ConfigError,
    Feedback,
    MemoryServices,
    Observation,
    Outcome,
    Step,
    Task,
    Trajectory,
)
from memarena.core.json_budget import (
    UnboundedSchemaError,
    answer_chars,
    answer_tokens,
    reply_tokens,
    token_caps,
)
from memarena.core.llm_types import Completion
from memarena.core.types import MemoryQuery, Usage
from memarena.llm.base import json_matches_schema
from memarena.memory.llm_calls import json_batch


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- hand-written schemas ------------------------------------------------------------------------
def closed(props: dict, required: list[str] | None = None) -> dict:
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


RECORD = closed(
    {
        "a": {"type": "string", "maxLength": 3},
        "n": {"type": "integer", "minimum": -12, "maximum": 7},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["x", "yy"]}, "maxItems": 2},
        "p": {"type": "number", "minimum": 0, "maximum": 1},
        "none": {"type": ["string", "null"], "maxLength": 1},
        "pick": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 9}, {"const": "ten"}]},
        "rows": {"type": "array", "items": closed({"k": {"type": "integer"}}), "maxItems": 0},
    },
    required=["a"],
)
# every optional property present, each value at its longest: -12 beats 7, false beats true,
# "yy" beats "x", null beats a 1-character string, "ten" beats any digit, and 17 fraction
# digits for the number (the float64 0.1 + 0.2 prints in exactly that many)
RECORD_LONGEST = {
    "a": "abc",
    "n": -12,
    "ok": False,
    "tags": ["yy", "yy"],
    "p": 0.1 + 0.2,
    "none": None,
    "pick": "ten",
    "rows": [],
}


@pytest.mark.parametrize(
    ("schema", "longest"),
    [
        (RECORD, RECORD_LONGEST),
        (closed({}), {}),
        ({"type": "integer", "minimum": 5, "exclusiveMaximum": 100}, 99),
        ({"type": "integer"}, -(2**63)),  # no bound: the int64 limit
        ({"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 3},
         ["ab", "ab", "ab"]),
        (closed({"k": closed({"deep": {"type": "boolean"}})}), {"k": {"deep": False}}),
    ],
)  # fmt: skip
def test_the_bound_is_the_longest_valid_instance_plus_the_end_token(schema, longest):
    text = compact(longest)
    assert json_matches_schema(text, schema)
    assert answer_chars(schema) == len(text)
    assert answer_tokens(schema) == len(text) + 1
    assert reply_tokens(schema) == len(text) + 1
    assert reply_tokens(schema, cap=3) == 3 and reply_tokens(schema, cap=10**6) == len(text) + 1


def test_record_by_hand():
    # "a":"abc" 9 + "n":-12 7 + "ok":false 10 + "tags":["yy","yy"] 18
    # + "p":0.30000000000000004 23 + "none":null 11 + "pick":"ten" 12 + "rows":[] 9 = 99,
    # + 7 commas + 2 braces = 108 characters; + 1 end token = 109 tokens
    assert answer_chars(RECORD) == 108 == len(compact(RECORD_LONGEST))
    assert answer_tokens(RECORD) == 109


@pytest.mark.parametrize(
    ("schema", "path", "why"),
    [
        (closed({"a": {"type": "string"}}), r"\$\.a", "string without maxLength"),
        (closed({"l": {"type": "array", "items": {"type": "integer"}}}), r"\$\.l", "maxItems"),
        ({"type": "object", "properties": {}}, r"\$", "open object"),
        (closed({"v": {}}), r"\$\.v", "any value"),
        (closed({"l": {"type": "array", "maxItems": 2, "items": {"type": "object"}}}),
         r"\$\.l\[\]", "open object"),
        (closed({"r": {"$ref": "#/$defs/x"}}), r"\$\.r", r"\$ref"),
    ],
)  # fmt: skip
def test_an_unbounded_part_is_named(schema, path, why):
    with pytest.raises(UnboundedSchemaError, match=path + ".*" + why):
        answer_chars(schema)


def test_token_caps_null_int_mapping_and_errors():
    assert token_caps(None, ("a", "b"), "method") == {"a": None, "b": None}
    assert token_caps(64, ("a", "b"), "method") == {"a": 64, "b": 64}
    assert token_caps({"b": 9}, ("a", "b"), "method") == {"a": None, "b": 9}
    with pytest.raises(ConfigError, match=r"unknown purposes \['c'\].*valid purposes"):
        token_caps({"c": 9}, ("a", "b"), "method")
    with pytest.raises(ConfigError, match="an int >= 1"):
        token_caps(0, ("a",), "method")


# -- the longest answer of any schema, and a double that writes it ------------------------------
def longest(schema: dict) -> Any:
    """The longest valid value of a bounded schema (built from the schema, independently of
    :func:`answer_chars`, whose result it must match)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(compact(v)))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k != key}
            branches = [{**rest, **b} for b in schema[key]]
            return longest(max(branches, key=lambda b: len(compact(longest(b)))))
    kind = schema["type"]
    if isinstance(kind, list):
        branches = [{**schema, "type": k} for k in kind]
        return longest(max(branches, key=lambda b: len(compact(longest(b)))))
    if kind == "string":
        return "x" * schema["maxLength"]  # every pattern the methods use accepts x...x
    if kind == "integer":
        low, high = schema.get("minimum", -(2**63)), schema.get("maximum", 2**63 - 1)
        return max((low, high), key=lambda v: len(str(v)))
    if kind == "number":
        assert schema.get("minimum", 0) <= 0.3 <= schema.get("maximum", 1), schema
        return 0.1 + 0.2  # 0.30000000000000004: 17 fraction digits
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "array":
        return [longest(schema["items"])] * schema["maxItems"] if schema["maxItems"] else []
    assert kind == "object"
    return {k: longest(v) for k, v in schema.get("properties", {}).items()}


class LongestLLM:
    """Answers every JSON request with the longest valid answer, one character per token, cut
    at ``max_tokens`` (the end token counts) as an engine cuts a reply; records the requests
    and whether each answer arrived whole."""

    name = "longest-llm"

    def __init__(self) -> None:
        self.usage = Usage()
        self.requests: list = []
        self.whole: list[bool] = []

    def generate(self, requests):
        out = []
        for request in requests:
            self.requests.append(request)
            if request.json_schema is None:
                text = "ok"
            else:
                text = compact(longest(request.json_schema))
            fits = len(text) + 1 <= request.max_tokens
            self.whole.append(fits)
            text = text if fits else text[: request.max_tokens]
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=len(text) + 1))
        return out

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None


def test_json_batch_parses_an_answer_that_needs_the_full_bound():
    from memarena.memory.episodic import json_request

    llm = LongestLLM()
    request = json_request("sys", "user", RECORD, None)
    assert request.max_tokens == 109
    (value,) = json_batch(llm, [request], usage=None, fallbacks=None, kind="test")
    assert value == {**RECORD_LONGEST, "a": "xxx"} and llm.whole == [True]
    # without room for the end token the document is still whole; one character less is not:
    # unparsable, a counted fallback
    assert json_batch(llm, [json_request("s", "u", RECORD, 108)], usage=None, fallbacks=None,
                      kind="test") == [value]  # fmt: skip
    cut = json_request("sys", "user", RECORD, 107)
    fallbacks: dict[str, int] = {}
    assert json_batch(llm, [cut], usage=None, fallbacks=fallbacks, kind="test") == [None]
    assert fallbacks == {"test": 1}


# -- every memory method's requests -------------------------------------------------------------
def _services(llm) -> MemoryServices:
    return MemoryServices(llm_factory=lambda: llm, embedder_factory=FakeEmbedder)


def _traj(goal: str, actions: list[str], success: bool, task_id: str = "t1"):
    """A finished episode of ``actions`` (all accepted), solved or not."""
    task = Task(task_id, "pddl", "train", "d", goal)
    steps = [Step(a, f"did {a}", 0.0, 0.5, Feedback(True, True)) for a in actions]
    status = "success" if success else "failure"
    outcome = Outcome(success, 1.0 if success else 0.2, len(steps), status)
    return Trajectory(task, "start", steps), outcome


def _query(goal: str, task_id: str = "q1") -> MemoryQuery:
    return MemoryQuery(Task(task_id, "pddl", "test", "d", goal), Observation("start", goal))


def _reme(llm, cap):
    from memarena.memory.reme import Experience, ReMe

    def make(**kw):  # memarena's caps on the experience fields (the released reading has none)
        caps = {"scenario_chars": 200, "experience_chars": 400}
        return ReMe(services=_services(llm), max_tokens=cap, **caps, **kw)

    memory = make(rerank=True, rewrite=True)
    stocked = Experience("", "moving files between folders", "cd, then mv", task_query="t1")
    stocked.id, stocked.source_task = memory.pool.new_id(), "t1"
    memory.pool.add(stocked)
    memory.observe_groups(
        [[_traj("move file", ["mv a b"], True), _traj("move file", ["ls"], False)]]
    )  # success, failure, comparative analyses; judge; generalised query of t1
    memory.begin_phase("eval")
    second = Experience("", "a file in a folder", "ls first", task_query="t2")
    second.id = memory.pool.new_id()
    memory.pool.add(second)
    memory.retrieve(_query("move the file to the folder"))  # rerank, rewrite
    memory.reflect([_traj("close ticket", ["x"], False, "q1")], attempt=1)
    make(extraction="trajectory").observe_groups([[_traj("g", ["a"], True)]])
    return memory


def _gmemory(llm, cap, evograph: bool = False):
    from memarena.memory.evograph import EvoGraphMem
    from memarena.memory.gmemory import GMemory

    def traj(task_id: str, goal: str, steps) -> Trajectory:
        return Trajectory(Task(task_id, "pddl", "train", "d", goal), "start", steps)

    def outcome(success: bool) -> Outcome:
        return Outcome(success, 1.0 if success else 0.0, 12, "success" if success else "failure")

    steps = [Step(f"act {i}", "ok", 0.0, 0.1 * i, Feedback(True, True)) for i in range(12)]
    kw = dict(max_tokens=cap, link_threshold=0.0, retrieve_threshold=-1.0, n_successes=2)
    if evograph:
        memory = EvoGraphMem(services=_services(llm), env_name="pddl", **kw)
    else:
        kw.update(start_insights_threshold=2, rounds_per_insights=1, insights_point_num=1)
        memory = GMemory(services=_services(llm), env_name="pddl", merge_every=3, **kw)
    memory.observe(traj("t0", "v:1,0,0", steps), outcome(True))  # key steps
    memory.observe(traj("t1", "v:1,0.1,0", steps), outcome(False))  # + fail reason, insights
    if evograph:
        memory.graph.add("check the room first", "t0")
        memory.graph.add("carry two balls at once", "t1")
    else:
        memory.insights.add("check the room first", ["t0", "t1"])
        memory.insights.add("carry two balls at once", ["t0", "t1"])
    t = traj("t2", "v:1,0.2,0", steps)
    memory.retrieve(MemoryQuery(t.task, Observation("start", t.task.goal)))  # relevance
    memory.observe(t, outcome(True))  # insights, merge (every 3) / the controller
    return memory


def _memorybank(llm, cap):
    from memarena.memory.memorybank import MemoryBank

    memory = MemoryBank(services=services(llm), mode="faithful", max_tokens=cap)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", False, "t1")]])
    return memory


def _voyager(llm, cap):
    from memarena.memory.voyager import Voyager

    for mode in ("parity", "faithful"):  # summaries; skills
        memory = Voyager(services=services(llm), mode=mode, max_tokens=cap)
        memory.observe_groups([[episode("v:1,0,0", True, "t0")]])
    return memory


def _generative_agents(llm, cap):
    from memarena.memory.generative_agents import GenerativeAgents

    memory = GenerativeAgents(
        services=services(llm), mode="faithful", reflection_threshold=1, max_tokens=cap
    )  # importance, then a reflection: questions, insights (and their importance)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    parity = GenerativeAgents(services=services(llm), mode="parity", max_tokens=cap)
    parity.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    parity.retrieve(query("v:1,0.1,0"))  # relevance of the 2 candidates
    return memory


def _amem(llm, cap):
    from memarena.memory.amem import AMem

    memory = AMem(services=services(llm), max_tokens=cap)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", True, "t1")]])
    memory.observe_groups([[episode("v:1,1,0", False, "t2")]])  # analysis, evolution
    return memory


def _memrl(llm, cap):
    from memarena.memory.memrl import MemRL

    memory = MemRL(services=services(llm), max_tokens=cap)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", False, "t1")]])
    return memory


def _memskill(llm, cap):
    from memarena.memory.memskill import MemSkill

    memory = MemSkill(services=services(llm), controller="llm", designer=True, design_every=1,
                      designer_min_failures=1, max_tokens=cap)  # fmt: skip
    # controller and executor (the solved task), designer (the failed one joins its pool)
    memory.observe_groups([[episode("v:1,0,0", True, "t0")], [episode("v:0,1,0", False, "t1")]])
    memory.observe_groups([[episode("v:1,0.1,0", True, "t2")]])  # items shown to the executor
    return memory


def _langmem(llm, cap):
    need_module("trustcall", "the langmem extra: pip install -e '.[langmem]' (`make setup-test`)")
    import trustcall._base as trustcall
    from langchain_core.messages import HumanMessage

    from memarena.core.json_budget import token_caps as caps_of
    from memarena.memory.langmem.chat_model import ToolCallBridge
    from memarena.memory.langmem.schema import Episode

    class Account:
        def __init__(self) -> None:
            self.token_usage: dict = {}
            self.fallbacks: dict = {}

    caps = caps_of(cap, ("extract", "update", "repair"), "method")
    bridge = ToolCallBridge(lambda: llm, Account(), caps=caps)
    session = [HumanMessage("the session")]
    for tools, choice in (
        ([Episode], "any"),  # extract
        ([Episode, trustcall.PatchDoc], "any"),  # update
        ([trustcall.PatchFunctionErrors], "PatchFunctionErrors"),  # repair
        ([], None),  # no tool: free text
    ):
        call = bridge.prepare(session, tools, choice)
        bridge.send([call.request], [call.purpose])
    return bridge


METHODS = {
    "reme": _reme,
    "gmemory": _gmemory,
    "evograph": lambda llm, cap: _gmemory(llm, cap, evograph=True),
    "memorybank": _memorybank,
    "voyager": _voyager,
    "generative_agents": _generative_agents,
    "amem": _amem,
    "memrl": _memrl,
    "memskill": _memskill,
    "langmem": _langmem,
}
# the purposes each flow above reaches (the last method object built; all of them for langmem)
REACHED = {
    "reme": {"summarize", "judge", "generalize", "rerank", "rewrite", "reflect"},
    "gmemory": {"key_steps", "fail_reason", "relevance", "insights", "merge"},
    "evograph": {"key_steps", "relevance", "controller"},
    "memorybank": {"summary", "overview"},
    "voyager": {"skill"},
    "generative_agents": {"importance", "questions", "insights"},
    "amem": {"analysis", "evolution"},
    "memrl": {"script", "reflection"},
    "memskill": {"controller", "executor", "designer"},
    "langmem": {"extract", "update", "repair"},
}


def _reached(memory) -> set[str]:
    return {p for p, u in memory.token_usage.items() if u.get("requests")}


@pytest.mark.parametrize("method", list(METHODS))
def test_every_request_asks_for_its_schema_bound_and_gets_its_longest_answer_whole(method):
    llm = LongestLLM()
    memory = METHODS[method](llm, None)
    assert REACHED[method] <= _reached(memory if method != "langmem" else memory.account)
    assert llm.requests
    for request in llm.requests:
        if request.json_schema is None:  # LangMem's free-text reply: one field's worth
            assert request.max_tokens == 400
            continue
        bound = answer_tokens(request.json_schema)  # finite: it raises otherwise
        assert request.max_tokens == bound
        assert len(compact(longest(request.json_schema))) + 1 == bound
    assert all(llm.whole)


@pytest.mark.parametrize("method", list(METHODS))
def test_a_configured_cap_is_never_exceeded_and_binds_only_when_smaller(method):
    llm = LongestLLM()
    METHODS[method](llm, 40)
    for request in llm.requests:
        bound = 400 if request.json_schema is None else answer_tokens(request.json_schema)
        assert request.max_tokens == min(40, bound)


def test_a_cap_per_purpose_leaves_the_other_purposes_at_their_bound():
    llm = LongestLLM()
    _generative_agents(llm, {"importance": 5})
    for request in llm.requests:
        rated = "importance" in request.json_schema["properties"]
        assert request.max_tokens == (5 if rated else answer_tokens(request.json_schema))
    with pytest.raises(ConfigError, match="unknown purposes"):
        _generative_agents(LongestLLM(), {"score": 5})


# -- llguidance: the longest answer is valid compact JSON and ends the document -----------------
class _ByteTokenizer:
    """256 one-byte tokens and an end token: tokens = UTF-8 bytes, the assumption's worst case."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = [256]

    def __call__(self, text):
        return list(text.encode("utf-8") if isinstance(text, str) else text)


def test_llguidance_takes_each_longest_answer_and_then_only_the_end_token():
    need_module("llguidance")
    import llguidance

    from memarena.llm.hf_constraints import compact_json  # the options the hf engine decodes with

    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()))
    schemas: dict[str, dict] = {}
    for make in METHODS.values():
        llm = LongestLLM()
        make(llm, None)
        for r in llm.requests:
            if r.json_schema is not None:
                schemas.setdefault(compact(r.json_schema), r.json_schema)
    assert len(schemas) >= 30
    for schema in schemas.values():
        grammar = llguidance.LLMatcher.grammar_from_json_schema(compact_json(schema))
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        assert not matcher.is_error(), matcher.get_error()
        answer = list(compact(longest(schema)).encode("utf-8"))
        assert len(answer) + 1 == answer_tokens(schema)
        assert matcher.consume_tokens(answer), compact(longest(schema))[:200]
        allowed = matcher.compute_logit_bias()
        assert [i for i in range(257) if allowed[i]] == [256]  # complete: only the end token


def test_memrl_budgets_by_hand():
    # {"script":"<800 characters>"}: 2 braces + 8 + 1 colon + 802 = 813 characters, + 1 end
    # token; {"reflection":...}: 12 for the key, so 817 + 1
    llm = LongestLLM()
    _memrl(llm, None)
    assert sorted({r.max_tokens for r in llm.requests}) == [814, 818]
