"""Test doubles shared by the tests: a scripted LLM, a deterministic embedder and a free-text
env whose tasks end after two steps."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from memarena.core.env import Env, EnvPrompt, Episode
from memarena.core.llm_types import Completion
from memarena.core.types import Feedback, Observation, StepResult, Task, Usage


def first_choice_completion(body: dict) -> dict:
    """An OpenAI chat-completion answer to the request ``body``: its first offered choice
    (vLLM's ``structured_outputs.choice``), else "noop" (the loopback test servers' reply)."""
    choices = (body.get("structured_outputs") or {}).get("choice") or ["noop"]
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": choices[0]},
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


class FakeLLM:
    """Answers each request with the next scripted text; 10 prompt / 3 completion tokens each."""

    name = "fake-llm"

    def __init__(self, answers: list[str] | None = None, default: str = "{}") -> None:
        self.answers = list(answers or [])
        self.default = default
        self.usage = Usage()
        self.requests: list = []
        self.batches = 0

    def generate(self, requests):
        self.batches += 1
        self.requests.extend(requests)
        out = []
        for _ in requests:
            text = self.answers.pop(0) if self.answers else self.default
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=3))
        return out

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None


class FakeEmbedder:
    """Deterministic: a goal "v:a,b,c" embeds as [a, b, c]; other text hashes to a vector."""

    name = "fake-embedder"
    dim = 3

    def __init__(self, **options) -> None:
        """``options``: the embedder config's other keys (model, normalize ...), ignored."""
        self.options = options

    def close(self) -> None:
        return None

    def encode(self, texts):
        rows = []
        for text in texts:
            if text.startswith("v:"):
                rows.append([float(x) for x in text[2:].split(",")])
            else:
                rng = np.random.default_rng(sum(map(ord, text)))
                rows.append(rng.normal(size=3))
        return np.asarray(rows, dtype=np.float32)


def schema_instance(schema: dict):
    """A small value valid for ``schema`` (the JSON-schema subset memory methods use)."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return schema_instance(schema["anyOf"][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        props = schema.get("properties", {})
        return {k: schema_instance(props[k]) for k in schema.get("required", []) if k in props}
    if kind == "array":
        return [schema_instance(schema.get("items", {})) for _ in range(schema.get("minItems", 1))]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    return "a rule" if schema.get("maxLength", 99) >= 6 else "x"


class SchemaLLM:
    """A memory-side LLM double for pipeline runs (``memory_backbone._target_=doubles.
    SchemaLLM``): every JSON request gets a valid answer for its schema; EvoGraph's controller
    schema (insight ids + ``add``/``insight``) gets "REVISE every shown insight and ADD one", so
    insights get version chains; a judge (``valid`` + ``score``) accepts with the top score.
    Choices get the first choice, free text "ok". Other keyword arguments are ignored, so it
    can stand in for a backbone preset (``--set backbone._target_=doubles.SchemaLLM``)."""

    def __init__(self, name: str = "schema-llm", **_preset) -> None:
        self.name = name
        self.usage = Usage()
        self.n = 0

    def generate(self, requests):
        out = []
        for r in requests:
            self.n += 1
            if r.json_schema is not None:
                text = json.dumps(self._answer(r.json_schema))
            elif r.choices:
                text = r.choices[0]
            else:
                text = "ok"
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=3))
        self.usage.calls += 1
        self.usage.requests += len(requests)
        return out

    def _answer(self, schema: dict):
        props = schema.get("properties", {})
        if "add" in props and "insight" in props:  # EvoGraph's graph controller
            answer = {"add": True, "insight": f"Check preconditions before acting ({self.n})."}
            for key, sub in props.items():
                if key not in ("add", "insight"):
                    ops = sub["properties"]["op"]["enum"]
                    op = "REVISE" if "REVISE" in ops else ops[0]
                    answer[key] = {"op": op, "revision": f"Revised rule {self.n}."}
                    if "revision" not in sub["properties"]:
                        del answer[key]["revision"]
            return answer
        if "valid" in props and "score" in props:  # a judge (ReMe): accept
            return {**schema_instance(schema), "valid": True,
                    "score": props["score"].get("maximum", 1.0)}  # fmt: skip
        return schema_instance(schema)

    def record_fallback(self, kind: str, detail: str = "") -> None:
        self.usage.count_fallback(kind)

    def close(self) -> None:
        return None


class RequestSchemaLLM(SchemaLLM):
    """:class:`SchemaLLM` whose answers are a function of the request alone (the number in
    EvoGraph's insights is a digest of the request, not a count of this process's calls), as
    a model behind the call cache answers: a killed run's resume gets, for the same request,
    the answer the uninterrupted run got (``memory_backbone._target_=doubles.
    RequestSchemaLLM``)."""

    def generate(self, requests):
        out = []
        for r in requests:
            self.n = int(hashlib.sha256(repr(r).encode()).hexdigest()[:6], 16) % 1000
            out += super().generate([r])
        self.usage.calls += 1 - len(requests)  # one call, as SchemaLLM counts it
        self.n = 0
        return out


def use_schema_llm(cfg) -> None:
    """Make a composed run config's memory LLM a :class:`SchemaLLM` (every JSON request gets a
    valid answer for its schema), in place."""
    from omegaconf import OmegaConf

    OmegaConf.update(
        cfg,
        "memory_backbone",
        {"_target_": "doubles.SchemaLLM", "name": "schema-llm", "same_as_agent": False},
        merge=False,
    )


# a tool and a chat history with one native tool call and its result (engine tool tests)
TOOLS = [{"type": "function", "function": {"name": "cd", "description": "Change directory.",
           "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}}}}]
HISTORY = [
    {"role": "user", "content": "go to docs"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0_0", "type": "function",
     "function": {"name": "cd", "arguments": {"folder": "docs"}}}]},
    {"role": "tool", "tool_call_id": "call_0_0", "name": "cd", "content": "ok"},
]  # fmt: skip


class EchoEnv(Env):
    """Free-text env: a task ends after two steps, whatever the agent says; one task per goal
    (its goal is in the first observation)."""

    name = "echo"
    step_budget = 10

    def __init__(self, goals: tuple[str, ...] = ("say anything",) * 2) -> None:
        self.goals = goals

    def tasks(self, split):
        return [Task(f"t{i}", "echo", split, "d", g, {}) for i, g in enumerate(self.goals)]

    def domains(self):
        return ["d"]

    def prompt(self, task=None):
        return EnvPrompt(system="echo", action_format="Reply with anything.")

    def open(self, task):
        return EchoEpisode(task)

    def close(self):
        pass


class EchoEpisode(Episode):
    def __init__(self, task):
        self.task, self.n = task, 0

    def reset(self):
        return Observation(f"start: {self.task.goal}", self.task.goal, None)

    def step(self, action):
        self.n += 1
        done = self.n >= 2
        return StepResult(Observation("ok", self.task.goal, None), float(done), done, done,
                          self.n / 2, Feedback(True, True, None))  # fmt: skip
