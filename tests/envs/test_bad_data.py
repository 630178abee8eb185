"""Bad data files (issue 36, item 9): each loader checks its records against the format and
names the file, the record and the field; a run asks only for the splits it used."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from types import SimpleNamespace

import pytest

from memarena.core.errors import ConfigError
from memarena.envs.fever.loader import memco_records
from memarena.envs.fever.partition import read_claims
from memarena.envs.hotpotqa.loader import read_hotpotqa
from memarena.envs.pddl.agentboard import load_folder
from memarena.envs.wiki.local import LocalWiki
from memarena.pipeline.summarize import flags_of

GRIPPER = (files("memarena.envs.pddl") / "domains" / "gripper.pddl").read_text()
PROBLEM = """(define (problem tiny) (:domain gripper-strips)
  (:objects rooma roomb ball1 left)
  (:init (room rooma) (room roomb) (ball ball1) (gripper left) (at-robby rooma)
         (at ball1 rooma) (free left))
  (:goal (and (at ball1 roomb))))
"""


def _pddl_folder(tmp_path: Path, domain: str = GRIPPER, problem: bytes | str = PROBLEM) -> Path:
    (tmp_path / "gripper").mkdir(parents=True)
    (tmp_path / "gripper.pddl").write_text(domain)
    data = problem.encode() if isinstance(problem, str) else problem
    (tmp_path / "gripper" / "prob01.pddl").write_bytes(data)
    return tmp_path


# -- PDDL -------------------------------------------------------------------------------------
def test_pddl_good_folder_loads(tmp_path):
    (problem,) = load_folder(_pddl_folder(tmp_path), ["gripper"])["gripper"]
    assert problem.source == "gripper/prob01.pddl"


def test_pddl_binary_problem_file_is_named(tmp_path):
    folder = _pddl_folder(tmp_path, problem=b"\x89PNG\r\n\x1a\n\x00\xff binary")
    with pytest.raises(ConfigError) as err:
        load_folder(folder, ["gripper"])
    msg = str(err.value)
    assert str(folder / "gripper" / "prob01.pddl") in msg and "problem file" in msg
    assert "is not text" in msg and "offset 0" in msg and "0x89" in msg


def test_pddl_truncated_domain_is_blamed_on_the_domain_file(tmp_path):
    folder = _pddl_folder(tmp_path, domain=GRIPPER[: len(GRIPPER) // 2])
    with pytest.raises(ConfigError) as err:
        load_folder(folder, ["gripper"])
    msg = str(err.value)
    assert f"domain file {folder / 'gripper.pddl'} (env.problems_dir) does not parse" in msg
    assert "prob01" not in msg and "truncated" in msg


def test_pddl_empty_and_broken_problem_files(tmp_path):
    with pytest.raises(ConfigError, match=r"problem file .*prob01\.pddl .* is empty"):
        load_folder(_pddl_folder(tmp_path / "a", problem=""), ["gripper"])
    folder = _pddl_folder(tmp_path / "b", problem=PROBLEM[:60])
    with pytest.raises(ConfigError) as err:
        load_folder(folder, ["gripper"])
    msg = str(err.value)
    assert f"problem file {folder / 'gripper' / 'prob01.pddl'}" in msg and "does not parse" in msg
    assert f"domain file {folder / 'gripper.pddl'}" in msg  # what it was parsed with


def test_pddl_goal_naming_an_undeclared_object_is_refused(tmp_path):
    # issue 50, 5: it ran as an unsolvable task with only a warning
    folder = _pddl_folder(tmp_path, problem=PROBLEM.replace("(at ball1 roomb)", "(at ball9 roomb)"))
    with pytest.raises(ConfigError) as err:
        load_folder(folder, ["gripper"])
    msg = str(err.value)
    assert msg.startswith(f"memarena: the problem file {folder / 'gripper' / 'prob01.pddl'}")
    assert "names the object ball9" in msg and "declare it in :objects" in msg


# -- HotpotQA ---------------------------------------------------------------------------------
def _hotpot(**changes) -> dict:
    record = {
        "_id": "q1",
        "question": "Where was the director of Red Harbor born?",
        "answer": "Red Harbor",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Red Harbor (film)", 0]],
        "context": [["Red Harbor (film)", ["Red Harbor is a film.", " It is old."]]],
    }
    record.update(changes)
    return record


def _hotpot_error(tmp_path: Path, records: list, suffix: str = ".json") -> str:
    path = tmp_path / f"hotpot{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        path.write_text(json.dumps(records))
    with pytest.raises(ConfigError) as err:
        read_hotpotqa(path)
    msg = str(err.value)
    assert str(path) in msg
    return msg


def test_hotpotqa_good_records_load(tmp_path):
    path = tmp_path / "ok.json"
    column = _hotpot(
        context={"title": ["A", "B"], "sentences": [["a."], ["b.", "c."]]},
        supporting_facts={"title": ["A"], "sent_id": [0]},
    )
    path.write_text(json.dumps([_hotpot(), column]))
    plain, converted = read_hotpotqa(path)
    assert plain["context"] == [["Red Harbor (film)", ["Red Harbor is a film.", " It is old."]]]
    assert converted["context"] == [["A", ["a."]], ["B", ["b.", "c."]]]
    assert converted["supporting_facts"] == [["A", 0]]


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"context": {"title": ["A"], "sentences": "A is a film."}}, "field context.sentences:"),
        (
            {"context": {"title": ["A"], "sentences": ["A is a film."]}},
            "field context.sentences[0]",
        ),
        ({"context": [["A", "A is a film."]]}, "field context[0][1]:"),
        ({"context": [["A"]]}, "field context[0]:"),
        ({"context": {"title": ["A", "B"], "sentences": [["a."]]}}, "field context:"),
        ({"question": ""}, "field question:"),
        ({"question": "   "}, "field question:"),
        ({"answer": None}, "field answer:"),
        ({"supporting_facts": [["A", "zero"]]}, "field supporting_facts[0][1]:"),
    ],
)
def test_hotpotqa_bad_record_names_file_record_and_field(tmp_path, changes, field):
    msg = _hotpot_error(tmp_path, [_hotpot(_id="ok"), _hotpot(**changes)])
    assert "record 1 (_id q1)" in msg and field in msg, msg


def test_hotpotqa_jsonl_names_the_line_and_binary_file_is_named(tmp_path):
    msg = _hotpot_error(tmp_path, [_hotpot(_id="ok"), _hotpot(question="")], suffix=".jsonl")
    assert "line 2 (_id q1), field question" in msg
    bad = tmp_path / "bin.json"
    bad.write_bytes(b"[\xff\xfe]")
    with pytest.raises(ConfigError, match=r"bin\.json is not UTF-8 text \(byte 0xff at offset 1"):
        read_hotpotqa(bad)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(_hotpot()) + "\n{oops\n")
    with pytest.raises(ConfigError, match=r"broken\.jsonl, line 2 is not valid JSON"):
        read_hotpotqa(broken)


# -- FEVER ------------------------------------------------------------------------------------
CLAIM = {"id": 1, "label": "SUPPORTS", "claim": "A is a film.", "evidence": [[[1, 2, "A", 0]]]}


def _claims(tmp_path: Path, lines: list[bytes]) -> Path:
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_fever_bad_records_name_file_line_and_field(tmp_path):
    good = json.dumps(CLAIM).encode()
    for bad, says in [
        (b'{"id": 2, "label": "SUPPORTS", "claim": "\xff"}', "line 2 is not UTF-8 text"),
        (json.dumps({**CLAIM, "id": 2, "evidence": "A"}).encode(), "line 2, field evidence:"),
        (json.dumps({**CLAIM, "id": 2, "evidence": [["A"]]}).encode(), "field evidence[0][0]"),
        (json.dumps({**CLAIM, "id": 2, "claim": ""}).encode(), "line 2 has an empty"),
    ]:
        path = _claims(tmp_path, [good, bad])
        with pytest.raises(ConfigError) as err:
            read_claims(path)
        assert str(path) in str(err.value) and says in str(err.value), str(err.value)
    assert read_claims(_claims(tmp_path, [good]))[0]["id"] == 1


def test_fever_partition_row_without_ab_domain_is_named(tmp_path):
    claims = _claims(tmp_path, [json.dumps(CLAIM).encode()])
    partition = tmp_path / "partition.jsonl"
    partition.write_text(json.dumps({"id": 1, "split": "train"}) + "\n")
    with pytest.raises(ConfigError, match=r"partition\.jsonl:1, field ab_domain: is None"):
        memco_records(str(partition), str(claims))
    partition.write_text("{not json\n")
    with pytest.raises(ConfigError, match=r"partition\.jsonl:1 is not valid JSON"):
        memco_records(str(partition), str(claims))


# -- wiki corpus ------------------------------------------------------------------------------
def test_wiki_corpus_page_with_sentences_as_a_string_is_named(tmp_path):
    corpus = tmp_path / "pages.jsonl"
    pages = [{"title": "A", "sentences": ["A is a film."]}, {"title": "B", "sentences": "B is."}]
    corpus.write_text("".join(json.dumps(p) + "\n" for p in pages))
    with pytest.raises(ConfigError, match=r"pages\.jsonl:2, field sentences: is 'B is\.'"):
        LocalWiki(path=str(corpus))
    corpus.write_text(json.dumps({"title": 5, "text": "x"}) + "\n")
    with pytest.raises(ConfigError, match=r"pages\.jsonl:1, field title: is 5"):
        LocalWiki(path=str(corpus))
    corpus.write_bytes(b'{"title": "A", "text": "\xff"}\n')
    with pytest.raises(ConfigError, match=r"pages\.jsonl:1 is not UTF-8 text"):
        LocalWiki(path=str(corpus))


# -- the splits a run asks for ----------------------------------------------------------------
class _TestOnlyEnv:
    """An AppWorld root with only a test split: asking for train fails as the real one does."""

    asked: list[str]

    def __init__(self) -> None:
        self.asked = []

    def tasks(self, split: str) -> list[str]:
        self.asked.append(split)
        if split != "test":
            raise ConfigError(f"memarena: env=appworld: no split {split!r}")
        return ["t1", "t2"]


def _parts(learns: bool) -> SimpleNamespace:
    protocol = SimpleNamespace(
        max_eval_tasks=None, max_train_tasks=5, eval_split="test", train_split="train",
        step_budget_by_method=None,
    )  # fmt: skip
    return SimpleNamespace(
        protocol=protocol,
        env=_TestOnlyEnv(),
        policy=SimpleNamespace(is_llm=True),
        memory=SimpleNamespace(learns=learns, name="test"),
        store=SimpleNamespace(invocations=lambda: []),
    )


def test_flags_ask_only_for_the_splits_the_run_used():
    parts = _parts(learns=False)  # method=none: no acquisition, no train split
    assert flags_of(parts, {"memory_fallback_rate": 0.0}) == []
    assert "train" not in parts.env.asked
    learning = _parts(learns=True)  # a learning memory did use the train split
    with pytest.raises(ConfigError, match="no split 'train'"):
        flags_of(learning, {"memory_fallback_rate": 0.0, "memory_size": 3})


# -- splits smaller than asked (issue 50, 5) --------------------------------------------------
@pytest.mark.parametrize("env_name", ["fever", "hotpotqa"])
def test_a_split_smaller_than_asked_is_warned_and_flagged(tmp_path, caplog, env_name):
    from memarena.envs.fever import FeverEnv
    from memarena.envs.hotpotqa import HotpotQAEnv
    from memarena.envs.wiki import ContextWiki

    if env_name == "fever":
        path = _claims(tmp_path, [json.dumps({**CLAIM, "id": i}).encode() for i in range(5)])
        env = FeverEnv(wiki=ContextWiki(), dataset="official", path=str(path), num_test=3)
    else:
        path = tmp_path / "hotpot.json"
        path.write_text(json.dumps([_hotpot(_id=f"q{i}") for i in range(5)]))
        env = HotpotQAEnv(wiki=ContextWiki(), dataset="distractor", path=str(path), num_test=3)
    with caplog.at_level("WARNING"):
        assert len(env.tasks("test")) == 3 and len(env.tasks("train")) == 2
    assert env.short_splits == {"train": {"asked": 100, "available": 2}}
    (warning,) = [r.getMessage() for r in caplog.records if "num_train" in r.getMessage()]
    assert f"env.num_train=100 but {path} holds only 2" in warning
    parts = SimpleNamespace(
        protocol=SimpleNamespace(max_eval_tasks=None, max_train_tasks=None, eval_split="test",
                                 train_split="train", step_budget_by_method=None),
        env=env, policy=SimpleNamespace(is_llm=True),
        memory=SimpleNamespace(learns=True, name="test"),
        store=SimpleNamespace(invocations=lambda: []),
    )  # fmt: skip
    assert "short_split" in flags_of(parts, {"memory_fallback_rate": 0.0, "memory_size": 3})
    parts.memory.learns = False  # a run that never used the train split is not flagged
    assert "short_split" not in flags_of(parts, {"memory_fallback_rate": 0.0})
    exact = FeverEnv(wiki=ContextWiki(), dataset="official", path=str(_claims(
        tmp_path, [json.dumps({**CLAIM, "id": i}).encode() for i in range(5)])),
        num_test=3, num_train=2)  # fmt: skip
    exact.tasks("test")
    assert exact.short_splits == {}
