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
from memarena.core.types import Task
from memarena.envs.wiki.backends import clean_title

SMOKE_FILES = {"train": "smoke_hotpotqa_train.json", "test": "smoke_hotpotqa_test.json"}
REQUIRED = ("question", "answer")


def _pairs(value: Any, first: str, second: str) -> list[list[Any]]:
    """[[a, b], ...] from the official list layout or the {first: [...], second: [...]} one."""
    if isinstance(value, dict):
        return [[a, b] for a, b in zip(value.get(first, []), value.get(second, []), strict=False)]
    return [list(v) for v in value or []]


def normalize_record(record: dict[str, Any], where: str) -> dict[str, Any]:
    missing = [k for k in REQUIRED if k not in record]
    if missing or not (record.get("_id") or record.get("id")):
        raise ConfigError(
            f"memarena: {where} lacks {missing or ['_id']}; a HotpotQA record has _id, question, "
            "answer, supporting_facts and context."
        )
    return {
        "_id": str(record.get("_id") or record.get("id")),
        "question": str(record["question"]),
        "answer": str(record["answer"]),
        "type": str(record.get("type") or "unknown"),
        "level": str(record.get("level") or ""),
        "supporting_facts": _pairs(record.get("supporting_facts"), "title", "sent_id"),
        "context": _pairs(record.get("context"), "title", "sentences"),
        "synthetic": bool(record.get("synthetic", False)),
    }


def read_hotpotqa(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"memarena: HotpotQA file {path} does not exist. Give an official HotpotQA json "
            "(e.g. hotpot_dev_distractor_v1.json or hotpot_dev_fullwiki_v1.json)."
        )
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            raw = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"memarena: {path} is not valid JSON ({err.msg}, line {err.lineno})."
        ) from None
    if not isinstance(raw, list):
        raise ConfigError(f"memarena: {path} must hold a JSON list of HotpotQA records.")
    return [normalize_record(r, f"{path} record {i}") for i, r in enumerate(raw)]


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
