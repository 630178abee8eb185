"""ReMe's LLM-as-judge gate at the paper's threshold (reme.txt Section 3.2, Appendix C.1,
Table 9): a distilled experience enters the pool only when the judge calls it valid with a score
of at least ``judge_min_score`` = 0.5 (conf/method/reme.yaml). The method is built from that
config file and driven through ``observe_groups`` as acquisition calls it (all samples of a
task in one group), with a scripted memory LLM whose judge answers by the experience it shows;
the end-to-end runs set ``judge_min_score=0.0``, so this is where the threshold is exercised."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from doubles import FakeLLM
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core import Completion, Feedback, MemoryServices, Outcome, Step, Task, Trajectory
from memarena.memory.reme import ReMe
from memarena.memory.reme import prompts as reme_prompts

CONF = Path(__file__).resolve().parents[2] / "conf" / "method" / "reme.yaml"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf")


class ScriptedJudge(FakeLLM):
    """The memory-side LLM: summarizer requests take the next scripted answer (FakeLLM's
    queue); a judge request answers the (valid, score) scripted for the experience its prompt
    shows; a generalisation request gets a fixed query."""

    def __init__(self, summaries: list[str], verdicts: dict[str, tuple[bool, float]]) -> None:
        super().__init__(summaries)
        self.verdicts = verdicts
        self.judged: list[str] = []

    def generate(self, requests):
        self.batches += 1
        self.requests.extend(requests)
        return [Completion(text=self._answer(r), prompt_tokens=10, completion_tokens=3)
                for r in requests]  # fmt: skip

    def _answer(self, request) -> str:
        if request.json_schema == reme_prompts.JUDGE_SCHEMA:
            content = request.messages[-1]["content"].split("  experience: ", 1)[1]
            self.judged.append(content)
            valid, score = self.verdicts[content]
            return json.dumps({"valid": valid, "score": score, "reason": "scripted"})
        if request.json_schema == reme_prompts.GENERALIZE_SCHEMA:
            return json.dumps({"generalized_query": "handle a request of this kind"})
        return self.answers.pop(0)


class WordEmbedder:
    """One axis per code word (+ a constant so no vector is zero): experiences naming different
    words are near-orthogonal (cosine ~0.003), far below the 0.5 dedup threshold, so only the
    judge decides what enters."""

    name = "words"

    def encode(self, texts):
        rows = [[t.lower().count(w) for w in WORDS] + [0.05] for t in texts]
        return np.asarray(rows, dtype=np.float32)


def _summary(*contents: str) -> str:
    items = [
        {"when_to_use": f"a task like {c.split()[0]}", "experience": c, "keywords": ["k"],
         "confidence": 0.8, "tools": ["t"]}
        for c in contents
    ]  # fmt: skip
    return json.dumps({"experiences": items})


def _pair(actions: list[str], success: bool, progress: float, task_id: str = "t1"):
    task = Task(task_id, "fake", "train", "d", "file the quarterly report")
    steps = [Step(a, f"did {a}", 0.0, progress, Feedback(True, True)) for a in actions]
    outcome = Outcome(success, 1.0 if success else progress, len(steps), "success" if success
                      else "failure")  # fmt: skip
    return Trajectory(task, "start", steps), outcome


def _paper_reme(llm: FakeLLM) -> ReMe:
    """ReMe exactly as conf/method/reme.yaml builds it (the pipeline instantiates this file)."""
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=WordEmbedder)
    return instantiate(OmegaConf.load(CONF), services=services, _convert_="all")


def test_the_paper_config_judges_with_threshold_one_half():
    conf = OmegaConf.load(CONF)
    assert (conf.judge, conf.judge_min_score) == (True, 0.5)
    memory = _paper_reme(FakeLLM())
    assert (memory.judge, memory.judge_min_score, memory.max_experiences) == (True, 0.5, 3)


def test_acquisition_admits_exactly_the_valid_experiences_scored_at_least_one_half():
    verdicts = {
        "alpha: list the folder before moving": (True, 0.9),  # enters
        "bravo: name the file in full": (True, 0.5),  # enters: the bound is inclusive
        "charlie: retry the same call": (True, 0.49),  # valid, scored under 0.5: out
        "delta: guess the id": (False, 1.0),  # invalid, whatever its score: out
        "echo: skip the check": (False, 0.2),  # out
        "foxtrot: read the error before retrying": (True, 0.51),  # enters
        "golf: stop after one step": (True, 0.0),  # out
    }
    a, b, c, d, e, f, g = verdicts
    llm = ScriptedJudge([_summary(a, b, c), _summary(d, e), _summary(f, g)], verdicts)
    memory = _paper_reme(llm)
    memory.begin_phase("acquire")
    # one task's 8 samples (samples: 8): the best one succeeds, the worst is at progress 0,
    # so success, failure and comparative analyses run (3 summaries, in this order)
    group = [_pair(["best"], True, 1.0)]
    group += [_pair([f"mid{i}"], False, p) for i, p in enumerate((0.6, 0.5, 0.4, 0.3, 0.2, 0.1))]
    group += [_pair(["worst"], False, 0.0)]
    assert len(group) == memory.acquisition_samples == 8
    memory.observe_groups([group])

    assert llm.judged == [a, b, c, d, e, f, g]  # every candidate judged once, in order
    assert [x.content for x in memory.pool.items.values()] == [a, b, f]
    assert [x.kind for x in memory.pool.items.values()] == ["success", "success", "comparative"]
    m = memory.metrics()
    # 7 candidates: 3 admitted (alpha 0.9, bravo 0.5, foxtrot 0.51), 4 rejected by the judge
    # (charlie 0.49, golf 0.0: scored low; delta, echo: invalid); no duplicates
    assert (m["memory_candidates"], m["memory_judge_rejected"]) == (7, 4)
    assert (m["memory_added"], m["memory_duplicates"], m["memory_experiences"]) == (3, 0, 3)
    assert m["memory_by_kind"] == {"comparative": 1, "success": 2}
    judge = memory.token_usage["judge"]
    assert (judge["calls"], judge["requests"]) == (1, 7)  # one batched judge call
    assert memory.fallbacks == {} and llm.answers == []


@pytest.mark.parametrize(
    ("valid", "score", "enters"),
    [
        (True, 1.0, True),
        (True, 0.5, True),  # score >= 0.5 keeps: the threshold itself enters
        (True, 0.4999, False),
        (True, 0.0, False),
        (False, 1.0, False),  # an invalid verdict is never kept
        (False, 0.5, False),
    ],
)
def test_one_verdict_decides_one_experience(valid, score, enters):
    content = "alpha: list the folder before moving"
    llm = ScriptedJudge([_summary(content)], {content: (valid, score)})
    memory = _paper_reme(llm)
    memory.observe_groups([[_pair(["only"], True, 1.0)]])  # one sample: one success analysis
    assert llm.judged == [content]
    assert len(memory.pool) == int(enters)
    m = memory.metrics()
    assert (m["memory_candidates"], m["memory_added"], m["memory_judge_rejected"]) == (
        1,
        int(enters),
        int(not enters),
    )


def test_dynamic_refinement_goes_through_the_same_judge():
    """ReMe (dynamic): a successful evaluation task is distilled (selective addition) and its
    experiences pass the same gate before they join the pool."""
    verdicts = {"alpha: list the folder before moving": (True, 0.5),
                "bravo: name the file in full": (True, 0.3)}  # fmt: skip
    a, b = verdicts
    llm = ScriptedJudge([_summary(a, b)], verdicts)
    memory = _paper_reme(llm)
    memory.begin_phase("eval")
    memory.observe_groups([[_pair(["solve"], True, 1.0, task_id="e1")]])
    assert llm.judged == [a, b]
    assert [x.content for x in memory.pool.items.values()] == [a]
    m = memory.metrics()
    assert (m["memory_candidates"], m["memory_added"], m["memory_judge_rejected"]) == (2, 1, 1)
