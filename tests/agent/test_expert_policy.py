"""The expert policy (``backbone=scripted``): the env's expert with deterministic noise, never
an LLM; the LLM policy hands the decisions' requests to its backbone unchanged."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from doubles import FakeLLM
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.agent import Decision, ExpertPolicy, LLMPolicy, as_policy
from memarena.core import ChatRequest, ConfigError, Episode, Observation, StepResult

CONF = Path(__file__).resolve().parents[2] / "conf"
CHOICES = [f"go to cabinet {i}" for i in range(1, 11)]


class Scripted(Episode):
    """An episode whose expert says ``expert`` and whose noise actions are ``noise``."""

    def __init__(self, expert: str | None = "go to cabinet 3", noise: list[str] | None = None):
        self.expert, self.noise = expert, noise or []

    def reset(self) -> Observation:
        return Observation("", "")

    def step(self, action: str) -> StepResult:
        raise AssertionError("not stepped here")

    def expert_action(self) -> str | None:
        return self.expert

    def noise_actions(self) -> list[str]:
        return self.noise


def decision(step: int, expert: str | None = "go to cabinet 3", run: int = 0, choices=CHOICES):
    request = ChatRequest(messages=[{"role": "user", "content": f"step {step}"}], choices=choices)
    return Decision(request, Scripted(expert), f"eval:{run}:task-7:{step}")


def texts(policy, decisions):
    return [c.text for c in policy.decide(decisions)]


def test_same_answers_whatever_the_batch_order_or_split():
    decisions = [decision(s) for s in range(40)]
    together = texts(ExpertPolicy(epsilon=0.5, seed=3), decisions)
    reversed_ = texts(ExpertPolicy(epsilon=0.5, seed=3), decisions[::-1])[::-1]
    one_by_one = [texts(ExpertPolicy(epsilon=0.5, seed=3), [d])[0] for d in decisions]
    assert together == reversed_ == one_by_one
    assert any(t != "go to cabinet 3" for t in together)  # the noise is there at eps=0.5
    assert together != texts(ExpertPolicy(epsilon=0.5, seed=4), decisions)  # seed matters


def test_epsilon_zero_always_follows_the_expert():
    policy = ExpertPolicy(epsilon=0.0)
    out = policy.decide([decision(s, expert=CHOICES[s % 10]) for s in range(50)])
    assert [c.text for c in out] == [CHOICES[s % 10] for s in range(50)]
    assert [c.choice_index for c in out] == [s % 10 for s in range(50)]


def test_epsilon_one_is_uniform_over_the_choices():
    policy = ExpertPolicy(epsilon=1.0, seed=0)
    counts = Counter(texts(policy, [decision(s) for s in range(2000)]))
    assert set(counts) == set(CHOICES)
    assert max(counts.values()) < 2 * min(counts.values())  # ~200 each


def test_noise_rate_matches_epsilon():
    out = texts(ExpertPolicy(epsilon=0.2, seed=1), [decision(s) for s in range(2000)])
    off_expert = sum(t != "go to cabinet 3" for t in out) / len(out)
    assert 0.13 < off_expert < 0.23  # eps * 9/10 = 0.18


def test_missing_expert_action_gives_a_random_choice():
    out = ExpertPolicy(epsilon=0.0).decide([decision(s, expert=None) for s in range(30)])
    assert all(c.text in CHOICES and c.choice_index == CHOICES.index(c.text) for c in out)
    assert len({c.text for c in out}) > 3


def test_expert_action_outside_the_choices_is_typed_as_text():
    (out,) = ExpertPolicy(epsilon=0.0).decide([decision(0, expert="wait1")])
    assert out.text == "wait1" and out.choice_index is None


def test_free_text_envs_draw_the_noise_from_the_episode():
    """No choices (ReAct QA): the expert's action is typed; noise comes from noise_actions."""
    request = ChatRequest(messages=[{"role": "user", "content": "q"}])
    episode = Scripted("Finish[yes]", noise=["Finish[no]", "Search[x]"])
    decisions = [Decision(request, episode, f"k{i}") for i in range(400)]
    out = ExpertPolicy(epsilon=0.5, seed=0).decide(decisions)
    counts = Counter(c.text for c in out)
    assert set(counts) == {"Finish[yes]", "Finish[no]", "Search[x]"}
    assert all(c.choice_index is None for c in out)  # typed text, parsed by the episode
    assert 0.42 < counts["Finish[yes]"] / 400 < 0.58  # 1 - eps: the noise never picks it


def test_it_is_not_an_llm_and_costs_no_tokens():
    policy = ExpertPolicy(epsilon=0.1)
    assert policy.is_llm is False and policy.name == "scripted-expert-eps0.10"
    policy.decide([decision(s) for s in range(5)])
    assert policy.usage.prompt_tokens == policy.usage.completion_tokens == 0
    assert policy.usage.requests == 5 and policy.usage.calls == 1
    with pytest.raises(ConfigError, match="must start with 'scripted'"):
        ExpertPolicy(name="qwen3-32b")
    with pytest.raises(ConfigError, match="epsilon"):
        ExpertPolicy(epsilon=1.5)


def test_llm_policy_sends_the_requests_and_never_the_expert():
    llm = FakeLLM(answers=["go to cabinet 1", "go to cabinet 2"])
    policy = as_policy(llm)
    assert isinstance(policy, LLMPolicy) and policy.is_llm and policy.name == llm.name
    decisions = [decision(0), decision(1)]
    out = policy.decide(decisions)
    assert [c.text for c in out] == ["go to cabinet 1", "go to cabinet 2"]
    assert llm.requests == [d.request for d in decisions] and llm.batches == 1
    assert policy.usage is llm.usage


def test_config_instantiates_the_expert_with_a_name_that_says_scripted(tmp_path):
    node = OmegaConf.load(CONF / "backbone" / "scripted.yaml")
    cfg = OmegaConf.create({"seed": 5, "paths": {"cache_dir": str(tmp_path)}, "backbone": node})
    cfg.backbone.epsilon = 0.25
    policy = as_policy(instantiate(cfg.backbone))
    assert isinstance(policy, ExpertPolicy)
    assert policy.name == cfg.backbone.name == "scripted-expert-eps0.25"
    assert policy.seed == 5 and policy.epsilon == 0.25
