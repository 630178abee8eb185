"""HotpotQA files -> Tasks.

Reads the official json files (``hotpot_dev_distractor_v1.json``, ``hotpot_dev_fullwiki_v1.json``,
``hotpot_train_v1.1.json``): a list of ``{_id, question, answer, type, level,
supporting_facts: [[title, sent_id]], context: [[title, [sentences]]]}``. The column layout of a
converted DataFrame (``context: {title: [...], sentences: [...]}``, ``supporting_facts: {title:
[...], sent_id: [...]}``, ``id``; e.g. Reflexion's sample) is accepted too. A ``.jsonl`` file
with one such record per line works as well.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.jsonl import numbered_lines
from memarena.core.types import Task
from memarena.envs.wiki.backends import clean_title

SMOKE_FILES = {"train": "smoke_hotpotqa_train.json", "test": "smoke_hotpotqa_test.json"}
REQUIRED = ("question", "answer")


FORMAT = (
    "a HotpotQA record has _id, question and answer (non-empty text), supporting_facts "
    "[[title, sent_id], ...] and context [[title, [sentence, ...]], ...]"
)


def _bad(where: str, field: str, problem: str) -> ConfigError:
    return ConfigError(f"memarena: {where}, field {field}: {problem}; {FORMAT}.")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _pairs(
    value: Any, first: str, second: str, field: str, where: str, check: Any
) -> list[list[Any]]:
    """[[a, b], ...] from the official list layout or the {first: [...], second: [...]} one;
    each pair checked by ``check(a, b, name_of_a, name_of_b)`` (a ConfigError naming the
    field of ``where``)."""
    if value is None:
        return []
    if isinstance(value, dict):
        a, b = value.get(first, []), value.get(second, [])
        for name, column in ((first, a), (second, b)):
            if not isinstance(column, list):
                raise _bad(where, f"{field}.{name}", f"is {_short(column)}, not a list")
        if len(a) != len(b):
            raise _bad(
                where, field, f"{first} has {len(a)} entries and {second} {len(b)}; they pair up"
            )
        pairs = [[x, y] for x, y in zip(a, b, strict=True)]
        for k, (x, y) in enumerate(pairs):
            check(x, y, f"{field}.{first}[{k}]", f"{field}.{second}[{k}]")
        return pairs
    if not isinstance(value, list):
        raise _bad(where, field, f"is {_short(value)}, not a list")
    out = []
    for k, pair in enumerate(value):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise _bad(where, f"{field}[{k}]", f"is {_short(pair)}, not a [{first}, {second}] pair")
        check(pair[0], pair[1], f"{field}[{k}][0]", f"{field}[{k}][1]")
        out.append(list(pair))
    return out


def _check_context(title: Any, sentences: Any, title_field: str, field: str, where: str) -> None:
    if not isinstance(title, str) or not title.strip():
        raise _bad(where, title_field, f"is {_short(title)}, not a non-empty title")
    if not isinstance(sentences, list) or not all(isinstance(x, str) for x in sentences):
        raise _bad(where, field, f"is {_short(sentences)}, not a list of sentence strings")


def _check_fact(title: Any, sent_id: Any, title_field: str, field: str, where: str) -> None:
    if not isinstance(title, str) or not title.strip():
        raise _bad(where, title_field, f"is {_short(title)}, not a non-empty title")
    if isinstance(sent_id, bool) or not isinstance(sent_id, int) or sent_id < 0:
        raise _bad(where, field, f"is {_short(sent_id)}, not a sentence index (an int >= 0)")


def normalize_record(record: Any, where: str) -> dict[str, Any]:
    """One record checked against the format (ConfigError naming ``where`` and the field) and
    brought to the official list layout."""
    if not isinstance(record, dict):
        raise ConfigError(f"memarena: {where} is {_short(record)}, not a JSON object; {FORMAT}.")
    missing = [k for k in REQUIRED if k not in record]
    if missing or not (record.get("_id") or record.get("id")):
        raise ConfigError(
            f"memarena: {where} lacks {missing or ['_id']}; a HotpotQA record has _id, question, "
            "answer, supporting_facts and context."
        )
    rid = record.get("_id") or record.get("id")
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        raise _bad(where, "_id", f"is {_short(rid)}, not a string or int")
    where = f"{where} (_id {rid})"
    for key in REQUIRED:
        if not isinstance(record[key], str) or not record[key].strip():
            raise _bad(where, key, f"is {_short(record[key])}, not non-empty text")
    for key in ("type", "level"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise _bad(where, key, f"is {_short(record[key])}, not text")
    return {
        "_id": str(rid),
        "question": record["question"],
        "answer": record["answer"],
        "type": str(record.get("type") or "unknown"),
        "level": str(record.get("level") or ""),
        "supporting_facts": _pairs(
            record.get("supporting_facts"), "title", "sent_id", "supporting_facts", where,
            lambda a, b, fa, fb: _check_fact(a, b, fa, fb, where),
        ),
        "context": _pairs(
            record.get("context"), "title", "sentences", "context", where,
            lambda a, b, fa, fb: _check_context(a, b, fa, fb, where),
        ),
        "synthetic": bool(record.get("synthetic", False)),
    }  # fmt: skip


def read_hotpotqa(path: str | Path) -> list[dict[str, Any]]:
    """The records of an official HotpotQA json (a list) or a ``.jsonl`` file, each checked
    (ConfigError naming the file, the record and the field)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"memarena: HotpotQA file {path} does not exist. Give an official HotpotQA json "
            "(e.g. hotpot_dev_distractor_v1.json or hotpot_dev_fullwiki_v1.json)."
        )
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"memarena: HotpotQA file {path} is not UTF-8 text (byte {data[err.start]:#04x} at "
            f"offset {err.start}): a binary or corrupt file? Give the official json."
        ) from None
    if path.suffix == ".jsonl":
        records = []
        for lineno, line in numbered_lines(text):
            try:
                records.append((f"{path}, line {lineno}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise ConfigError(
                    f"memarena: {path}, line {lineno} is not valid JSON ({err.msg} at column "
                    f"{err.colno}); a .jsonl file has one HotpotQA record per line."
                ) from None
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"memarena: {path} is not valid JSON ({err.msg}, line {err.lineno})."
            ) from None
        if not isinstance(raw, list):
            raise ConfigError(f"memarena: {path} must hold a JSON list of HotpotQA records.")
        records = [(f"{path}, record {i}", r) for i, r in enumerate(raw)]
    if not records:
        raise ConfigError(f"memarena: HotpotQA file {path} holds no records.")
    return [normalize_record(r, where) for where, r in records]


def smoke_records(split: str) -> list[dict[str, Any]]:
    return read_hotpotqa(Path(str(files("memarena.envs.wiki") / "data" / SMOKE_FILES[split])))


def to_task(env: str, split: str, record: dict[str, Any], partition: str) -> Task:
    titles = [clean_title(t) for t, _ in record["supporting_facts"]]
    payload = {
        "question_id": record["_id"],
        "answer": record["answer"],
        "type": record["type"],
        "level": record["level"],
        "gold_titles": list(dict.fromkeys(titles)),
        "context": record["context"],
    }
    if record["synthetic"]:
        payload["synthetic"] = True
    return Task(
        id=f"{env}/{split}/{record['_id']}",
        env=env,
        split=split,
        domain=record["type"] if partition == "type" else "hotpotqa",
        goal=f"Question: {record['question']}",
        payload=payload,
    )
