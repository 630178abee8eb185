"""A prompt that does not fit the context beside its reply cap is never cut silently
(``backbone.prompt_overflow``, :mod:`memarena.llm.context_fit`; issue 49 item 6).

The vLLM engine runs against the fake package (characters are tokens, ``tests/fake_vllm.py``);
the hf engine's fitting is checked on its row bookkeeping without loading a model; the runner,
the metrics and the run's flags on hand-made completions.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from doubles import EchoEnv
from fake_vllm import FakeLLM, install

from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.core import (
    PROMPT_TOO_LONG,
    ChatRequest,
    Completion,
    Usage,
    runtime,
)
from memarena.core.errors import ConfigError
from memarena.llm.context_fit import fit_prompt
from memarena.llm.hf import HFBackbone
from memarena.llm.hf_constraints import Row
from memarena.llm.vllm_engine import VLLMBackbone
from memarena.memory.none import NoMemory
from memarena.pipeline.summarize import flags_of
from memarena.results.metrics import compute_metrics
from memarena.results.records import EpisodeRecord

IDS = list(range(50))


# -- the rule ---------------------------------------------------------------------------------
def test_a_prompt_that_fits_is_sent_whole_with_its_cap():
    for overflow in ("shorten_reply", "refuse", "cut_left"):
        fit = fit_prompt(IDS, 14, 64, overflow)
        assert (fit.ids, fit.max_tokens, fit.event) == (IDS, 14, None)
    assert fit_prompt(IDS, 10_000, None, "refuse").event is None  # no known context


def test_shorten_reply_keeps_the_prompt_and_lowers_the_cap_to_the_room_left():
    fit = fit_prompt(IDS, 16, 64, "shorten_reply")
    assert (fit.ids, fit.max_tokens, fit.event) == (IDS, 64 - 50, "reply_shortened")
    # a choice would be cut by a lower cap; a prompt that fills the context leaves no room
    assert fit_prompt(IDS, 16, 64, "shorten_reply", shortenable=False).refused
    full = fit_prompt(list(range(64)), 16, 64, "shorten_reply")
    assert full.refused and full.event == PROMPT_TOO_LONG and full.prompt_tokens == 64


def test_refuse_and_the_earlier_left_cut():
    refused = fit_prompt(IDS, 16, 64, "refuse")
    assert refused.refused and refused.event == PROMPT_TOO_LONG
    cut = fit_prompt(IDS, 16, 64, "cut_left")
    assert cut.ids == IDS[-48:] and cut.max_tokens == 16 and cut.event == "prompt_truncated"


def test_a_bad_reading_names_the_key_and_the_choices():
    with pytest.raises(ConfigError) as err:
        HFBackbone(prompt_overflow="middle")
    assert "backbone.prompt_overflow='middle'" in str(err.value)
    assert all(v in str(err.value) for v in ("shorten_reply", "refuse", "cut_left"))


# -- the vLLM engine (fake package) -------------------------------------------------------------
@pytest.fixture
def fake_vllm(monkeypatch):
    install(monkeypatch, "structured_outputs")
    monkeypatch.setattr(runtime, "SHARED_MODELS", runtime.SharedModels())


def user(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def vllm(**kw) -> VLLMBackbone:
    return VLLMBackbone(model="Qwen/Qwen3-8B", cache_path=None, max_model_len=64, **kw)


def test_vllm_sends_the_prompt_whole_and_refuses_what_cannot_fit(fake_vllm):
    bb = vllm()
    # "<user>" + 20 x + "<assistant><think></think>" = 52 tokens: 12 left for a cap of 32
    fits, long, short = user("x" * 20, max_tokens=32), user("x" * 200), user("hi", max_tokens=8)
    out = bb.generate([fits, long, short])
    prompts, params = FakeLLM.instances[0].calls[0]
    assert [len(p["prompt_token_ids"]) for p in prompts] == [52, 34]  # the long one never sent
    assert [p.max_tokens for p in params] == [64 - 52, 8]
    assert out[0].prompt_fit == "reply_shortened" and out[0].prompt_tokens == 52
    assert out[1].fallback == PROMPT_TOO_LONG and out[1].text == ""
    assert "232 tokens" in out[1].error and "context of 64" in out[1].error
    assert out[2].prompt_fit is None and out[2].fallback is None
    assert bb.usage.fallbacks == {"reply_shortened": 1, PROMPT_TOO_LONG: 1}
    bb.close()


def test_vllm_readings_refuse_and_cut_left(fake_vllm):
    refuse = vllm(prompt_overflow="refuse")
    out = refuse.generate([user("x" * 20, max_tokens=32)])
    assert out[0].fallback == PROMPT_TOO_LONG and FakeLLM.instances[0].calls == []
    cut = vllm(prompt_overflow="cut_left")
    out = cut.generate([user("x" * 200, max_tokens=16)])
    prompts, _ = FakeLLM.instances[0].calls[0]
    assert len(prompts[0]["prompt_token_ids"]) == 64 - 16  # the head went
    assert out[0].prompt_fit == "prompt_truncated" and out[0].prompt_tokens == 48
    assert cut.usage.fallbacks == {"prompt_truncated": 1}
    # another reading, another cache identity: no answer is replayed for the other one
    assert len({vllm().cache_model, refuse.cache_model, cut.cache_model}) == 3


def test_vllm_refusals_are_never_cached_and_fits_replay(fake_vllm, tmp_path):
    bb = VLLMBackbone(model="Qwen/Qwen3-8B", cache_path=tmp_path / "c.sqlite", max_model_len=64)
    requests = [user("x" * 20, max_tokens=32), user("x" * 200)]
    bb.generate(requests)
    again = bb.generate(requests)
    assert again[0].cached and again[0].prompt_fit == "reply_shortened"
    assert not again[1].cached and again[1].fallback == PROMPT_TOO_LONG
    assert bb.usage.fallbacks == {"reply_shortened": 2, PROMPT_TOO_LONG: 2}
    bb.close()


# -- the hf engine's rows ---------------------------------------------------------------------
def hf_rows(overflow: str, prompt: list[int]) -> tuple[Row, object]:
    bb = object.__new__(HFBackbone)  # the fitting only: no model loaded
    bb.prompt_overflow, bb.context_limit = overflow, 64
    bb.encode_prompt = lambda request: prompt
    row = Row(request=user("q"), max_tokens=16)
    return row, bb._fit(row.request, row)


def test_hf_rows_take_the_fitted_cap_and_refused_rows_never_decode():
    row, fit = hf_rows("shorten_reply", IDS)
    assert fit.ids == IDS and row.max_tokens == 14 and not row.done
    row, fit = hf_rows("shorten_reply", list(range(70)))
    assert fit.refused and row.done
    row, fit = hf_rows("cut_left", list(range(70)))
    assert len(fit.ids) == 48 and row.max_tokens == 16 and not row.done


# -- the runner, the metrics and the flags ----------------------------------------------------
class FittingBackbone:
    """Answers by task and step: TASK0 cut on the left at every step, TASK1 refused at its
    second step, TASK2 with a shortened reply at its first."""

    name = "fitting-double"

    def __init__(self):
        self.usage, self.steps = Usage(), {}

    def generate(self, requests):
        return [self.answer(r) for r in requests]

    def answer(self, request):
        task = next(t for t in ("TASK0", "TASK1", "TASK2") if t in str(request.messages))
        step = self.steps[task] = self.steps.get(task, -1) + 1
        if task == "TASK0":
            return Completion("fine", 5, 2, prompt_fit="prompt_truncated")
        if task == "TASK1" and step == 1:
            return Completion("", fallback=PROMPT_TOO_LONG, error="prompt_too_long: 99 > 64")
        if task == "TASK2" and step == 0:
            return Completion("fine", 5, 2, prompt_fit="reply_shortened")
        return Completion("fine", 5, 2)

    def close(self):
        pass


def test_the_runner_counts_fits_ends_refused_episodes_and_the_run_is_flagged():
    settings = RunnerSettings(concurrency=3, action_mode="free", max_tokens=16)
    env = EchoEnv(goals=("TASK0", "TASK1", "TASK2"))
    results = EpisodeRunner(env, as_policy(FittingBackbone()), NoMemory(), settings,
                            progress_bar=False).run(env.tasks("test"))  # fmt: skip
    by_task = {r.trajectory.task.id: r for r in results}
    assert by_task["t0"].outcome.status == "success"
    assert by_task["t0"].details == {"prompt_truncated": 2}
    refused = by_task["t1"].outcome
    assert refused.status == PROMPT_TOO_LONG and not refused.success and refused.steps == 1
    assert refused.error == "prompt_too_long: 99 > 64"
    assert by_task["t2"].details == {"reply_shortened": 1}
    records = [EpisodeRecord.of(r.trajectory, r.outcome, run=0, details=r.details).to_json()
               for r in results]  # fmt: skip
    metrics = compute_metrics(records)
    assert (metrics["prompt_truncated"], metrics["reply_shortened"]) == (2, 1)
    assert metrics["prompt_too_long"] == 1 and metrics["n_errors"] == 0
    parts = SimpleNamespace(
        protocol=SimpleNamespace(max_eval_tasks=None, max_train_tasks=None, eval_split="test",
                                 train_split="train", step_budget_by_method=None),
        env=env,
        policy=SimpleNamespace(is_llm=True),
        memory=SimpleNamespace(learns=False, name="none"),
        store=SimpleNamespace(invocations=lambda: []),
    )  # fmt: skip
    metrics["memory_fallback_rate"] = 0.0
    assert flags_of(parts, metrics) == ["prompt_truncated", "prompt_too_long"]
    quiet = {"memory_fallback_rate": 0.0, "prompt_truncated": 0, "reply_shortened": 4,
             "acquisition_prompt_too_long": 1}  # fmt: skip
    assert flags_of(parts, quiet) == ["prompt_too_long"]  # a shortened reply is not flagged
