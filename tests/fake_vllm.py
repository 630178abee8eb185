"""A fake ``vllm`` package for tests (vLLM needs a GPU; it is not installed here): it records
what the engine receives and answers with objects shaped like vLLM's ``RequestOutput``. Both
guided-decoding styles are faked (``StructuredOutputsParams`` and ``GuidedDecodingParams``).
Install it with ``install(monkeypatch, api)``."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any


class FakeTokenizer:
    """Characters as tokens; a chat template that shows its kwargs (and records the template
    it was given in ``templates``)."""

    chat_template = "{{ fake }}"

    def __init__(self) -> None:
        self.template_calls: list[dict[str, Any]] = []
        self.templates: list[str | None] = []

    def apply_chat_template(self, messages, chat_template=None, tokenize=False, **kwargs):
        assert tokenize is False
        self.template_calls.append(dict(kwargs))
        self.templates.append(chat_template)
        think = kwargs.get("enable_thinking")
        body = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        gen = "<assistant>" if kwargs.get("add_generation_prompt") else ""
        return body + gen + ("<think></think>" if think is False else "")

    def encode(self, text, add_special_tokens=True):
        assert add_special_tokens is False
        return [ord(c) for c in text]


@dataclass
class FakeCompletionOutput:
    text: str
    token_ids: list[int]


@dataclass
class FakeRequestOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeCompletionOutput] = field(default_factory=list)


class FakeSamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        allowed = {"n", "temperature", "top_p", "max_tokens", "seed", "stop", FakeLLM.field}
        assert set(kwargs) <= allowed, f"unexpected SamplingParams fields {set(kwargs) - allowed}"
        self.kwargs = kwargs

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["kwargs"][name]
        except KeyError:
            raise AttributeError(name) from None


class FakeGuided:
    def __init__(self, json=None, choice=None, regex=None, grammar=None) -> None:
        assert sum(x is not None for x in (json, choice, regex, grammar)) == 1
        self.json, self.choice = json, choice


class StructuredOutputsParams(FakeGuided):
    pass


class GuidedDecodingParams(FakeGuided):
    pass


class FakeLLM:
    """Answers a choice with ``answer_for_choice`` (first choice by default), JSON with a
    matching object and free text with a fixed sentence cut at the first stop string."""

    field = "structured_outputs"
    instances: list[FakeLLM] = []
    answer_for_choice: Any = None
    events: list[str] = []  # shutdowns and distributed teardowns, in order

    def __init__(self, **engine_args: Any) -> None:
        self.engine_args = engine_args
        self.tokenizer = FakeTokenizer()
        self.calls: list[tuple[list[dict], list[FakeSamplingParams]]] = []
        FakeLLM.instances.append(self)

    def shutdown(self) -> None:
        FakeLLM.events.append(f"shutdown {self.engine_args['model']}")

    def get_tokenizer(self) -> FakeTokenizer:
        return self.tokenizer

    @property
    def model_config(self):
        return types.SimpleNamespace(max_model_len=self.engine_args.get("max_model_len") or 4096)

    def generate(self, prompts, sampling_params, use_tqdm=True):
        assert isinstance(sampling_params, list) and len(sampling_params) == len(prompts)
        self.calls.append((prompts, sampling_params))
        outputs = []
        for prompt, params in zip(prompts, sampling_params, strict=True):
            guided = getattr(params, FakeLLM.field, None)
            if guided is not None and guided.choice is not None:
                pick = FakeLLM.answer_for_choice
                text = guided.choice[0] if pick is None else pick(guided.choice)
            elif guided is not None and guided.json is not None:
                text = '{"answer": "yes"}'
            else:
                text = "free text. STOP here"
                for stop in getattr(params, "stop", None) or ():
                    text = text.split(stop)[0]
            text = text[: params.max_tokens]
            outputs.append(
                FakeRequestOutput(
                    prompt_token_ids=list(prompt["prompt_token_ids"]),
                    outputs=[FakeCompletionOutput(text, [ord(c) for c in text] + [0])],
                )
            )
        return outputs


def fake_vllm_modules(api: str) -> dict[str, types.ModuleType]:
    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.0.fake"
    vllm.LLM = FakeLLM
    vllm.SamplingParams = FakeSamplingParams
    sp = types.ModuleType("vllm.sampling_params")
    sp.SamplingParams = FakeSamplingParams
    if api == "structured_outputs":
        sp.StructuredOutputsParams = StructuredOutputsParams
    elif api == "guided_decoding":
        sp.GuidedDecodingParams = GuidedDecodingParams
    vllm.sampling_params = sp
    state = types.ModuleType("vllm.distributed.parallel_state")
    state.destroy_model_parallel = lambda: FakeLLM.events.append("destroy_model_parallel")
    state.destroy_distributed_environment = lambda: FakeLLM.events.append(
        "destroy_distributed_environment"
    )
    return {"vllm": vllm, "vllm.sampling_params": sp, "vllm.distributed.parallel_state": state}


def install(monkeypatch, api: str = "structured_outputs") -> None:
    """Put the fake package in ``sys.modules`` (undone by ``monkeypatch``), with fresh
    records."""
    for name, module in fake_vllm_modules(api).items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(FakeLLM, "field", api)
    monkeypatch.setattr(FakeLLM, "instances", [])
    monkeypatch.setattr(FakeLLM, "answer_for_choice", None)
    monkeypatch.setattr(FakeLLM, "events", [])
