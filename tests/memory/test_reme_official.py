"""ReMe's operators as its released code runs them (agentscope-ai/ReMe 26cb5ca6), each with the
arithmetic worked by hand, and the paper's (or memarena's earlier) reading one key away:
deduplication (memory_deduplication_op.py), the reward and the comparative analysis, the
analyses of the kept samples and their choice (init_task_memory_pool.py, the extraction ops),
the judge (memory_validation_op.py), the retry protocol and the deletion schedule
(bfcl_agent.py execute, delete_memory_op.py) and the "query keywords" retrieval key (Table 5)."""

from __future__ import annotations

import numpy as np
import pytest
from doubles import FakeLLM
from test_reme import BAD, OK, _answer, _exp, _query, _reme, _stocked, _traj, _user

from memarena.core import MemoryContext, MemoryServices
from memarena.memory.reme import Experience
from memarena.memory.reme import prompts as reme_prompts
from memarena.memory.reme import summarizer as summ
from memarena.memory.reme.experience import query_keywords


class TableEmbedder:
    """Exact vectors for the texts a test names (anything else is a test error)."""

    name = "table"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def encode(self, texts):
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


def _with_table(table: dict[str, list[float]], llm: FakeLLM, **kw):
    memory = _reme(llm, generalize_queries=False, judge=False, **kw)
    memory.services = MemoryServices(
        llm_factory=lambda: llm, embedder_factory=lambda: TableEmbedder(table)
    )
    stored = Experience("exp-1", "W1", "C1")
    memory.pool.next_id = 2
    memory.pool.add(stored)
    return memory


# the stored experience's usage scenario W1 and its scenario + content; three candidates, each
# embedded as "<when to use> <content>" (memory_deduplication_op.py _get_task_memory_embedding)
TABLE = {
    "W1": [1, 0, 0, 0],
    "W1 C1": [1, 1, 1, 1],
    "WA CA": [1, 1, 1, 1],  # cos with W1: 1 / (1 * 2) = 0.5 exactly: not > 0.5, kept
    "WB CB": [1, 1, 0, 0],  # cos with W1: 1 / sqrt(2) = 0.707 > 0.5: a duplicate
    "WC CC": [1, 1, 1, 1],  # cos with W1 0.5, but 1.0 with candidate A kept before it
    "WA": [0, 0, 1, 0],
    "WC": [0, 1, 0, 0],
}


def test_dedup_compares_scenario_plus_content_with_stored_scenarios_strictly_above_half():
    llm = FakeLLM([_answer(_exp("WA", "CA"), _exp("WB", "CB"), _exp("WC", "CC"))])
    memory = _with_table(TABLE, llm)
    memory.observe_groups([[_traj("g", ["a"], True, 1.0)]])
    assert [e.when_to_use for e in memory.pool.items.values()] == ["W1", "WA"]
    assert memory.metrics()["memory_duplicates"] == 2  # B (pool, 0.707) and C (batch, 1.0)


def test_dedup_against_contents_is_memarenas_earlier_reading():
    llm = FakeLLM([_answer(_exp("WA", "CA"), _exp("WB", "CB"), _exp("WC", "CC"))])
    memory = _with_table(TABLE, llm, dedup_against="content", dedup_threshold=0.9)
    memory.observe_groups([[_traj("g", ["a"], True, 1.0)]])
    # against "W1 C1" = [1,1,1,1]: A 1.0 > 0.9 (dup), B 2 / (sqrt 2 * 2) = 0.707 (kept), C 1.0
    assert [e.when_to_use for e in memory.pool.items.values()] == ["W1", "WB"]
    assert memory.metrics()["memory_duplicates"] == 2


# two tasks summarised in one batch: A from task t1, D from task t2. D's scenario + content is
# 0.707-close to A's (a duplicate when the batch is one set) but orthogonal to A's scenario WA
# and to W1 (kept when t2 is compared with the pool t1 left, as ReMe's one-task flow does)
SEQUENTIAL = {**TABLE, "WD CD": [0, 1, 0, 1], "WD": [0, 0, 0, 1]}


def _two_tasks(memory, batched: bool) -> list[str]:
    groups = [[_traj("g1", ["a"], True, 1.0, task_id="t1")],
              [_traj("g2", ["a"], True, 1.0, task_id="t2")]]  # fmt: skip
    for chunk in [groups] if batched else [[g] for g in groups]:
        memory.observe_groups(chunk)
    return [e.when_to_use for e in memory.pool.items.values()]


def test_each_task_is_deduplicated_against_the_pool_the_previous_task_left():
    answers = [_answer(_exp("WA", "CA")), _answer(_exp("WD", "CD"))]
    sequential = _with_table(SEQUENTIAL, FakeLLM(list(answers)))
    assert _two_tasks(sequential, batched=True) == ["W1", "WA", "WD"]  # the default: task
    one_by_one = _with_table(SEQUENTIAL, FakeLLM(list(answers)))
    assert _two_tasks(one_by_one, batched=False) == ["W1", "WA", "WD"]  # the same pool
    batch = _with_table(SEQUENTIAL, FakeLLM(list(answers)), dedup_scope="batch")
    assert _two_tasks(batch, batched=True) == ["W1", "WA"]  # D against A's content: 0.707
    assert batch.metrics()["memory_duplicates"] == 1


def _asked(llm: FakeLLM) -> list[str]:
    return [_user(r) for r in llm.requests]


@pytest.mark.parametrize(("env_name", "compared"), [("bfcl", False), ("pddl", True)])
def test_two_failures_compare_only_under_a_graded_reward(env_name, compared):
    # BFCL's reward is 0/1 (bfcl_agent.py get_reward), so two failed samples score 0 and 0 and
    # the comparative analysis (highest > lowest) does not run; with the env's progress
    # (AppWorld's passed / all tests, and memarena's other envs) 0.6 > 0.2 triggers it
    memory = _reme(FakeLLM(default=_answer()), generalize_queries=False, env_name=env_name)
    llm = memory.services.llm
    group = [_traj("g", ["first"], False, 0.6), _traj("g", ["second"], False, 0.2)]
    memory.observe_groups([group])
    asked = _asked(llm)
    assert [("failed the task" in a) for a in asked] == [True, True] + [False] * compared
    assert ("Better attempt (score 0.60)" in asked[-1]) is compared
    assert memory.reward == ("success" if env_name == "bfcl" else "progress")


def test_samples_sorted_by_reward_ascending_keep_the_first_and_the_last():
    # rewards 0, 1, 0, 1 (reward: success); a stable ascending sort gives s0, s2, s1, s3: the
    # first is s0 (the earliest of the lowest), the last s3 (the latest of the highest)
    memory = _reme(FakeLLM(default=_answer()), generalize_queries=False, reward="success")
    llm = memory.services.llm
    group = [
        _traj("g", ["s0"], False, 0.0),
        _traj("g", ["s1"], True, 1.0),
        _traj("g", ["s2"], False, 0.0),
        _traj("g", ["s3"], True, 1.0),
    ]
    memory.observe_groups([group])
    success, failure, comparative = _asked(llm)
    assert "solved the task" in success and "s3" in success
    assert "failed the task" in failure and "s0" in failure
    better, worse = comparative.split("Worse attempt")
    assert "s3" in better and "s0" in worse and "s0" not in better
    assert "s1" not in " ".join(_asked(llm)) and "s2" not in " ".join(_asked(llm))


def test_every_kept_failure_gets_its_failure_analysis():
    memory = _reme(FakeLLM(default=_answer()), generalize_queries=False, reward="success")
    group = [_traj("g", [a], False, 0.0) for a in ("f0", "f1", "f2")]
    memory.observe_groups([group])
    asked = _asked(memory.services.llm)
    # sorted ascending (all 0, stable): f0 first, f2 last; both are failures
    assert len(asked) == 2 and "f0" in asked[0] and "f2" in asked[1]


@pytest.mark.parametrize("sees_task", [False, True])
def test_the_judge_sees_condition_and_content_only(sees_task):
    llm = FakeLLM([_answer(_exp("moving a file", "cd first"))], default=OK)
    memory = _reme(llm, generalize_queries=False, judge_sees_task=sees_task)
    memory.observe_groups([[_traj("move report.txt to docs", ["a"], True, 1.0)]])
    judge = _asked(llm)[1]
    assert "when to use: moving a file" in judge and "experience: cd first" in judge
    assert ("move report.txt to docs" in judge) is sees_task


@pytest.mark.parametrize(
    ("raw", "lenient", "minimum", "verdict"),
    [
        (None, True, 0.5, (True, True)),  # no JSON verdict: valid, score 0.5 >= 0.5
        (None, True, 0.6, (False, True)),  # ... which a 0.6 threshold rejects
        (None, False, 0.5, (False, True)),  # judge_unparsed: drop
        ({"valid": True}, True, 0.5, (True, True)),  # score missing: 0.5
        ({"score": 0.2}, True, 0.5, (False, True)),  # valid missing: True, but 0.2 < 0.5
        ({"valid": False, "score": 0.9}, True, 0.5, (False, False)),
        ({"valid": True, "score": 0.5}, False, 0.5, (True, False)),
    ],
)
def test_judge_verdicts(raw, lenient, minimum, verdict):
    assert summ.judge_verdict(raw, minimum, lenient) == verdict


LESSON = _answer(_exp("a ticket cannot be closed twice", "check the ticket status first"))


def test_a_retry_sees_the_judged_failure_analysis_only():
    llm = FakeLLM([LESSON, OK])
    memory = _stocked(generalize_queries=False)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=_vocab)
    memory.retrieve(_query("close ticket 7"))
    failed = _traj("close ticket 7", ["close_ticket()"], False, 0.0, task_id="q1")
    (ctx,) = memory.reflect([failed], attempt=1)
    summary, judge = _asked(llm)
    assert "failed the task" in summary and "close_ticket()" in summary  # failure analysis
    assert "ticket status" in judge
    assert set(ctx.slots) == {"lessons"} and ctx.memory_ids == []  # lessons only
    assert ctx.slots["lessons"].endswith(
        "Experience 1:\n When to use: a ticket cannot be closed twice\n"
        " Content: check the ticket status first\n"
    )
    assert len(memory.pool) == 3  # shown, not added


def _vocab():
    from test_reme import VocabEmbedder

    return VocabEmbedder()


@pytest.mark.parametrize("why", ["judge", "duplicate"])
def test_without_a_surviving_lesson_the_retry_retrieves_again_and_counts(why):
    if why == "judge":
        llm = FakeLLM([LESSON, BAD])
    else:  # the lesson is exp-1's usage scenario again: cos 1.0 > 0.5
        llm = FakeLLM([_answer(_exp("buying stock", "at the market price")), OK])
    memory = _stocked(generalize_queries=False, top_k=2)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=_vocab)
    failed = _traj("buy stock at the price", ["x"], False, 0.0, task_id="q1")
    (ctx,) = memory.reflect([failed], attempt=1)
    assert "lessons" not in ctx.slots and ctx.memory_ids == ["exp-1", "exp-2"]
    retry, outcome = _traj("buy stock at the price", ["y"], False, 0.0, task_id="q1")
    retry.memory_ids = list(ctx.memory_ids)
    memory.observe_retry(retry, outcome, 1, ctx)
    # the fresh retrieval's recalls count (f), the failed retry adds no utility (u)
    assert [(e.retrievals, e.utility) for e in memory.pool.items.values()] == [
        (1, 0),
        (1, 0),
        (0, 0),
    ]
    none = _stocked(generalize_queries=False, retry_without_lessons="none")
    rejecting = FakeLLM([LESSON, BAD])
    none.services = MemoryServices(llm_factory=lambda: rejecting, embedder_factory=_vocab)
    assert none.reflect([failed], attempt=1) == [None]


@pytest.mark.parametrize(
    ("adds", "kind"), [("retry_summary", "success"), ("lessons", "reflection")]
)
def test_a_successful_retry_adds_its_summary_or_the_lessons(adds, kind):
    llm = FakeLLM([LESSON, OK], default=OK)
    memory = _stocked(generalize_queries=False, retry_success_adds=adds)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=_vocab)
    failed = _traj("close ticket 7", ["close_ticket()"], False, 0.0, task_id="q1")
    (ctx,) = memory.reflect([failed], attempt=1)
    summary = _answer(_exp("a message is long", "send the message in parts"))
    llm.answers = [summary, OK] if adds == "retry_summary" else [OK]
    retry = _traj("close ticket 7", ["check_status()", "close_ticket()"], True, 1.0, "q1")
    memory.observe_retry(*retry, 1, ctx)
    added = list(memory.pool.items.values())[3:]
    assert [e.kind for e in added] == [kind]
    if adds == "retry_summary":  # the success analysis of the retry's own trajectory
        assert "solved the task" in _user(llm.requests[-2])
        assert "check_status()" in _user(llm.requests[-2])
        assert added[0].content == "send the message in parts"
    else:
        assert added[0].content == "check the ticket status first"
    assert memory.metrics()["reflection_successes"] == 1


def test_deletion_passes_over_the_pool_every_five_trials_retries_included():
    memory = _stocked(generalize_queries=False)
    memory.services = MemoryServices(
        llm_factory=lambda: FakeLLM(default=_answer()), embedder_factory=_vocab
    )
    memory.pool.items["exp-1"].retrievals = 4
    first, outcome = _traj("buy stock", ["a"], False, 0.0, task_id="e1")
    first.memory_ids = ["exp-1"]
    memory.observe(first, outcome)  # trial 1: f = 5, u = 0 -> eligible, but no pass yet
    assert "exp-1" in memory.pool and memory.counts["trials"] == 1
    lessons = MemoryContext(slots={"lessons": "x"}, memory_ids=[])
    for attempt in (1, 2, 3):  # trials 2-4: retries shown lessons only (no recall counted)
        memory.observe_retry(*_traj("buy stock", ["b"], False, 0.0, "e1"), attempt, lessons)
    assert "exp-1" in memory.pool and memory.pool.items["exp-1"].retrievals == 5
    memory.observe(*_traj("fill the car", ["c"], False, 0.0, task_id="e2"))  # trial 5: pass
    assert "exp-1" not in memory.pool and memory.metrics()["memory_deleted"] == 1


def test_deletion_after_every_update_among_the_touched_is_the_other_schedule():
    memory = _stocked(generalize_queries=False, delete_every=None)
    memory.services = MemoryServices(
        llm_factory=lambda: FakeLLM(default=_answer()), embedder_factory=_vocab
    )
    memory.pool.items["exp-1"].retrievals = 4
    memory.pool.items["exp-2"].retrievals = 9  # untouched by the trial below: kept
    first, outcome = _traj("buy stock", ["a"], False, 0.0, task_id="e1")
    first.memory_ids = ["exp-1"]
    memory.observe(first, outcome)
    assert list(memory.pool.items) == ["exp-2", "exp-3"]


def test_query_keywords_are_the_querys_words_without_stopwords():
    text = "Please move the file report.txt into the folder docs, then list it again."
    assert query_keywords(text) == "move, file, report.txt, folder, docs, list"
    assert query_keywords("the a") == "the a"  # nothing left: the query itself


def test_retrieval_by_query_keywords_and_by_experience_keywords():
    # exp-3 came from "fill the car" (keywords "fill, car"); its own LLM keyword is "the"
    by_query = _stocked(top_k=1, retrieval_key="keywords")
    assert by_query.pool.items["exp-3"].key_text("keywords") == "fill, car"
    assert by_query.retrieve(_query("wash my car, please")).memory_ids == ["exp-3"]
    by_own = _stocked(top_k=1, retrieval_key="experience_keywords")
    assert by_own.pool.items["exp-1"].key_text("experience_keywords") == "stock"
    assert by_own.retrieve(_query("stock")).memory_ids == ["exp-1"]


def test_the_paper_config_follows_the_official_code():
    from pathlib import Path

    from omegaconf import OmegaConf

    conf = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "method" / "reme.yaml")
    official = {
        "dedup_threshold": 0.5,
        "dedup_against": "usage_scenario",
        "reward": "official",
        "judge_sees_task": False,
        "judge_unparsed": "keep",
        "retry_lessons": "failure_analysis",
        "retry_context": "lessons",
        "retry_without_lessons": "retrieve",
        "retry_success_adds": "retry_summary",
        "delete_strict": True,
        "delete_every": "official",
        "retrieval_key": "usage_scenario",
    }
    assert {k: conf[k] for k in official} == official
    bfcl, appworld = (_reme(FakeLLM(), env_name=env) for env in ("bfcl", "appworld"))
    assert (bfcl.delete_every, appworld.delete_every) == (5, 1)
    assert (bfcl.reward, appworld.reward) == ("success", "progress")


def test_a_retrys_lessons_take_the_experiences_place_in_the_released_bfcl_prompt():
    """protocol.prompt_layout=reme_bfcl (bfcl_agent.py update_task_history_with_memory): the
    retrieved experiences and, on a retry, the failed trial's lessons fill the same slot of one
    template, the task first, with the same ``Experience i :`` blocks."""
    from memarena.agent.prompts import MEMORY_HEADER, TASK_LABEL, Conversation
    from memarena.core import EnvPrompt, Observation, Task

    llm = FakeLLM([LESSON, OK])
    memory = _stocked(generalize_queries=False)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=_vocab)
    retrieved = memory.retrieve(_query("close ticket 7"))
    failed = _traj("close ticket 7", ["close_ticket()"], False, 0.0, task_id="q1")
    (lessons,) = memory.reflect([failed], attempt=1)
    task = Task("q1", "bfcl", "test", "d", "close ticket 7")
    obs = Observation("User: close ticket 7", "User: close ticket 7", user_turn=True)
    obs.info["request"] = "close ticket 7"
    prompt = EnvPrompt(system="SYSTEM", action_format="FORMAT")

    def head(context):
        chat = Conversation.start(
            prompt, task, obs, context, show_actions=False, native_tools=True, layout="reme_bfcl"
        )
        (message,) = chat.messages()
        assert message["role"] == "user"
        return message["content"]

    top = f"{TASK_LABEL}\nclose ticket 7\n\n{MEMORY_HEADER}\n"
    first, retry = head(retrieved), head(lessons)
    assert first.startswith(top + "Experience 1 :\n When to use: ")
    assert first.count(" :\n When to use: ") == 3  # the pool's three experiences (top_k 5)
    assert retry == top + (
        "Experience 1 :\n When to use: a ticket cannot be closed twice\n"
        " Content: check the ticket status first\n"
    )
    # memarena's own headers are not shown
    assert reme_prompts.HEADER not in first and reme_prompts.LESSONS_HEADER not in retry
    # nothing retrieved: the raw request alone
    assert head(MemoryContext.empty()) == "close ticket 7"
    # both numberings read back (the lessons' replay on resume reads the memarena slot)
    assert summ.parse_numbered(lessons.bare["lessons"]) == summ.parse_numbered(
        lessons.slots["lessons"]
    ) == [("a ticket cannot be closed twice", "check the ticket status first")]
