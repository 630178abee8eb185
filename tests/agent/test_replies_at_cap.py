"""Replies that reach the reply cap are counted per episode (``details["replies_at_cap"]``) and
in ``metrics.json``; the thinking switch (``backbone.enable_thinking``) is a key every agent
backbone takes."""

from __future__ import annotations

import pytest
from doubles import EchoEnv
from needs import need_module

from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.agent.policy import ExpertPolicy, LLMPolicy
from memarena.core import ChatRequest, Completion, Usage
from memarena.memory.none import NoMemory
from memarena.results.metrics import compute_metrics
from memarena.results.records import EpisodeRecord


class LengthBackbone:
    """Answers with ``lengths`` completion tokens in turn (cycled), as a backbone reports them."""

    name = "length-double"

    def __init__(self, lengths, max_new_tokens=None):
        self.usage, self.lengths, self.k = Usage(), list(lengths), 0
        self.max_new_tokens = max_new_tokens

    def generate(self, requests):
        out = []
        for _ in requests:
            out.append(Completion("hello", 5, self.lengths[self.k % len(self.lengths)]))
            self.k += 1
        return out

    def close(self):
        pass


def _run(backbone, max_tokens=16):
    settings = RunnerSettings(concurrency=1, action_mode="free", max_tokens=max_tokens)
    return EpisodeRunner(EchoEnv(), as_policy(backbone), NoMemory(), settings,
                         progress_bar=False).run(EchoEnv().tasks("test"))  # fmt: skip


def test_replies_at_the_cap_are_counted_per_episode_and_in_the_metrics():
    # four replies of 16, 3, 3, 16 tokens at a cap of 16: one per episode reached it
    results = _run(LengthBackbone([16, 3, 3, 16]))
    assert [r.details for r in results] == [{"replies_at_cap": 1}, {"replies_at_cap": 1}]
    records = [EpisodeRecord.of(r.trajectory, r.outcome, run=0, details=r.details).to_json()
               for r in results]  # fmt: skip
    metrics = compute_metrics(records)
    assert metrics["replies_at_cap"] == 2 and metrics["replies_at_cap_rate"] == 2 / 4
    # none at the cap: no details key, and the metric is 0
    quiet = _run(LengthBackbone([3]))
    assert all(r.details is None for r in quiet)
    records = [EpisodeRecord.of(r.trajectory, r.outcome, run=0).to_json() for r in quiet]
    assert compute_metrics(records)["replies_at_cap"] == 0


def test_the_backbones_own_cap_counts_and_constrained_or_expert_replies_never_do():
    # the backbone cuts at 8 whatever the request asks (max_new_tokens): 8 tokens is the cap
    results = _run(LengthBackbone([8], max_new_tokens=8), max_tokens=16)
    assert [r.details["replies_at_cap"] for r in results] == [2, 2]
    policy = LLMPolicy(LengthBackbone([1], max_new_tokens=8))
    assert policy.reply_limit(ChatRequest([], max_tokens=16)) == 8
    assert policy.reply_limit(ChatRequest([], max_tokens=4)) == 4
    assert policy.reply_limit(ChatRequest([], choices=["a", "b"], max_tokens=4)) is None
    assert policy.reply_limit(ChatRequest([], json_schema={"type": "object"})) is None
    assert ExpertPolicy().reply_limit(ChatRequest([], max_tokens=4)) is None


def test_enable_thinking_is_a_key_every_agent_backbone_takes():
    # the expert takes it and ignores it (ReMe's BFCL experiments run with backbone=scripted)
    assert ExpertPolicy(enable_thinking=True).name.startswith("scripted")
    need_module("openai")
    from memarena.core.errors import ConfigError
    from memarena.llm.openai_engine import OpenAIBackbone

    server = OpenAIBackbone(model="Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1",
                            api_key_env=None, chat_template_kwargs={"enable_thinking": False},
                            enable_thinking=True, cache_path=None)  # fmt: skip
    assert server.chat_template_kwargs == {"enable_thinking": True}
    assert server.body(ChatRequest([{"role": "user", "content": "x"}]))["extra_body"][
        "chat_template_kwargs"
    ] == {"enable_thinking": True}
    plain = OpenAIBackbone(model="m", base_url="http://127.0.0.1:8000/v1", api_key_env=None,
                           cache_path=None)  # fmt: skip
    assert plain.chat_template_kwargs == {} and plain.cache_model != server.cache_model
    with pytest.raises(ConfigError, match="enable_thinking=null"):
        OpenAIBackbone(model="gpt-4o-mini", api_key_env=None, enable_thinking=True)
