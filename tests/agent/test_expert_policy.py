"""The scripted expert: deterministic noise, never an LLM, refuses memory-side calls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.core.protocols import Backbone
from memarena.llm.scripted import ScriptedBackbone

CONF = Path(__file__).resolve().parents[2] / "conf"
CHOICES = [f"go to cabinet {i}" for i in range(1, 11)]


def agent_request(step: int, expert: str | None = "go to cabinet 3", run: int = 0) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "user", "content": f"step {step}"}],
        choices=CHOICES,
        meta={"expert_action": expert, "episode_key": f"{run}:task-7:{step}"},
    )


def texts(backbone, requests):
    return [c.text for c in backbone.generate(requests)]


def test_same_answers_whatever_the_batch_order_or_split():
    requests = [agent_request(s) for s in range(40)]
    together = texts(ScriptedBackbone(epsilon=0.5, seed=3), requests)
    reversed_ = texts(ScriptedBackbone(epsilon=0.5, seed=3), requests[::-1])[::-1]
    one_by_one = [texts(ScriptedBackbone(epsilon=0.5, seed=3), [r])[0] for r in requests]
    assert together == reversed_ == one_by_one
    assert any(t != "go to cabinet 3" for t in together)  # the noise is there at eps=0.5
    assert together != texts(ScriptedBackbone(epsilon=0.5, seed=4), requests)  # seed matters


def test_epsilon_zero_always_follows_the_expert():
    bb = ScriptedBackbone(epsilon=0.0)
    out = bb.generate([agent_request(s, expert=CHOICES[s % 10]) for s in range(50)])
    assert [c.text for c in out] == [CHOICES[s % 10] for s in range(50)]
    assert [c.choice_index for c in out] == [s % 10 for s in range(50)]


def test_epsilon_one_is_uniform_over_the_choices():
    bb = ScriptedBackbone(epsilon=1.0, seed=0)
    counts = Counter(texts(bb, [agent_request(s) for s in range(2000)]))
    assert set(counts) == set(CHOICES)
    assert max(counts.values()) < 2 * min(counts.values())  # ~200 each


def test_noise_rate_matches_epsilon():
    bb = ScriptedBackbone(epsilon=0.2, seed=1)
    out = texts(bb, [agent_request(s) for s in range(2000)])
    off_expert = sum(t != "go to cabinet 3" for t in out) / len(out)
    assert 0.13 < off_expert < 0.23  # eps * 9/10 = 0.18


def test_missing_expert_action_gives_a_random_choice():
    bb = ScriptedBackbone(epsilon=0.0)
    out = bb.generate([agent_request(s, expert=None) for s in range(30)])
    assert all(c.text in CHOICES and c.choice_index == CHOICES.index(c.text) for c in out)
    assert len({c.text for c in out}) > 3


def test_expert_action_outside_the_choices_is_typed_as_text():
    bb = ScriptedBackbone(epsilon=0.0)
    (out,) = bb.generate([agent_request(0, expert="wait1")])
    assert out.text == "wait1" and out.choice_index is None


def test_it_is_not_an_llm_and_costs_no_tokens():
    bb = ScriptedBackbone(epsilon=0.1)
    assert isinstance(bb, Backbone) and bb.is_llm is False
    assert bb.name == "scripted-expert-eps0.10"
    bb.generate([agent_request(s) for s in range(5)])
    assert bb.usage.prompt_tokens == bb.usage.completion_tokens == 0
    assert bb.usage.requests == 5 and bb.usage.calls == 1
    with pytest.raises(ConfigError, match="must start with 'scripted'"):
        ScriptedBackbone(name="qwen3-32b")
    with pytest.raises(ConfigError, match="epsilon"):
        ScriptedBackbone(epsilon=1.5)


@pytest.mark.parametrize(
    "request_",
    [
        ChatRequest(
            messages=[{"role": "user", "content": "summarize"}], json_schema={"type": "object"}
        ),
        ChatRequest(messages=[{"role": "user", "content": "reflect"}]),
        ChatRequest(messages=[{"role": "user", "content": "x"}], choices=["a", "b"]),  # no expert
    ],
    ids=["json", "free", "no-expert-meta"],
)
def test_memory_side_calls_are_refused_with_the_fix(request_):
    with pytest.raises(ConfigError, match="memory_backbone") as err:
        ScriptedBackbone().generate([request_])
    assert "not an LLM" in str(err.value)


def test_episode_key_is_required():
    request_ = ChatRequest(messages=[], choices=["a"], meta={"expert_action": "a"})
    with pytest.raises(ConfigError, match="episode_key"):
        ScriptedBackbone().generate([request_])


def test_config_instantiates_with_a_name_that_says_scripted(tmp_path):
    node = OmegaConf.load(CONF / "backbone" / "scripted.yaml")
    cfg = OmegaConf.create({"seed": 5, "paths": {"cache_dir": str(tmp_path)}, "backbone": node})
    cfg.backbone.epsilon = 0.25
    bb = instantiate(cfg.backbone)
    assert isinstance(bb, ScriptedBackbone)
    assert bb.name == cfg.backbone.name == "scripted-expert-eps0.25"
    assert bb.seed == 5 and bb.epsilon == 0.25 and bb.cache is None
