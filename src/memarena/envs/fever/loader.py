"""FEVER records -> Tasks: the official jsonl, MemCo's Film/TV vs Music partition, the smoke set.

- Official jsonl (``shared_task_dev.jsonl``, ``paper_dev.jsonl``, G-Memory's ``fever_dev.jsonl``):
  ``{id, label, claim, evidence}``; the gold pages are the titles of the first evidence set
  (FEVER titles such as ``Soul_Food_-LRB-film-RRB-`` shown as ``Soul Food (film)``); NOT ENOUGH
  INFO claims have none.
- MemCo's partition: either MemCo's own files (a folder with ``fever_ab_train_A_v3.jsonl``,
  ``fever_ab_train_B_v3.jsonl``, ``fever_ab_test_v3.jsonl``), or a partition file of ids
  (``{id, split, ab_domain}`` rows) joined with the official claims file that holds those ids:
  MemCo's own ids shipped in the package (``partition=memco``, the default), ours from the
  embedding labeller (``partition=embedding``), or the user's (``partition_path``).
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.jsonl import numbered_lines
from memarena.core.types import Task
from memarena.envs.fever.partition import read_claims
from memarena.envs.wiki.backends import clean_title

MEMCO_FILES = {
    "train": ("fever_ab_train_A_v3.jsonl", "fever_ab_train_B_v3.jsonl"),
    "test": ("fever_ab_test_v3.jsonl",),
}
# env.partition -> the shipped partition of ids: MemCo's own lists (scripts/
# prepare_memco_lists.py) or ours from the embedding labeller (scripts/prepare_fever_partition.py)
PACKAGED_PARTITIONS = {
    "memco": "memco_official_partition.jsonl",
    "embedding": "memco_partition.jsonl",
}
SMOKE_FILES = {"train": "smoke_fever_train.jsonl", "test": "smoke_fever_test.jsonl"}


def gold_titles(record: dict[str, Any]) -> list[str]:
    """Display titles of the first evidence set (none for NOT ENOUGH INFO)."""
    evidence = record.get("evidence") or []
    first = evidence[0] if evidence and isinstance(evidence[0], list) else []
    titles = [clean_title(e[2]) for e in first if isinstance(e, list) and len(e) > 2 and e[2]]
    return list(dict.fromkeys(titles))


def to_task(env: str, split: str, record: dict[str, Any], default_domain: str) -> Task:
    domain = record.get("ab_domain") or record.get("domain") or default_domain
    payload = {
        "claim_id": record["id"],
        "claim": record["claim"],
        "answer": record["label"],
        "gold_titles": gold_titles(record),
    }
    if record.get("synthetic"):
        payload["synthetic"] = True
    return Task(
        id=f"{env}/{split}/{record['id']}",
        env=env,
        split=split,
        domain=str(domain),
        goal=f"Claim: {record['claim']}",
        payload=payload,
    )


def smoke_records(split: str) -> list[dict[str, Any]]:
    return read_claims(Path(str(files("memarena.envs.wiki") / "data" / SMOKE_FILES[split])))


def memco_records(
    partition_path: str | None, claims_path: str | None, partition: str = "memco"
) -> dict[str, list[dict]]:
    """MemCo's partition as {split: records}; see the module doc for the two sources."""
    if partition_path and Path(partition_path).is_dir():
        folder = Path(partition_path)
        missing = [f for fs in MEMCO_FILES.values() for f in fs if not (folder / f).is_file()]
        if missing:
            raise ConfigError(
                f"memarena: env.partition_path={partition_path} is a folder without MemCo's "
                f"partition file(s) {missing}; give that folder (MemCo's data/fever/) or a "
                "partition .jsonl from scripts/prepare_fever_partition.py."
            )
        return {
            split: [r for f in names for r in read_claims(folder / f)]
            for split, names in MEMCO_FILES.items()
        }
    path = (
        Path(partition_path)
        if partition_path
        else Path(str(files("memarena.envs.fever") / "data" / PACKAGED_PARTITIONS[partition]))
    )
    if not path.is_file():
        raise ConfigError(f"memarena: env.partition_path={path} does not exist.")
    if not claims_path:
        raise ConfigError(
            "memarena: env.dataset=memco with a partition of ids needs the official FEVER claims "
            "that hold them: set env.path to the FEVER dev jsonl (shared_task_dev.jsonl or "
            "G-Memory's fever_dev.jsonl), or set env.partition_path to MemCo's data/fever/ folder."
        )
    claims = {r["id"]: r for r in read_claims(claims_path)}
    out: dict[str, list[dict]] = {"train": [], "test": []}
    for lineno, line in numbered_lines(path.read_text(encoding="utf-8")):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"memarena: {path}:{lineno} is not valid JSON ({err.msg} at column "
                f"{err.colno}); a partition file has one {{id, split, ab_domain}} per line."
            ) from None
        if not isinstance(row, dict):
            raise ConfigError(f"memarena: {path}:{lineno} is not a JSON object.")
        if not isinstance(row.get("ab_domain"), str) or not row["ab_domain"]:
            raise ConfigError(
                f"memarena: {path}:{lineno}, field ab_domain: is {row.get('ab_domain')!r}; "
                "a partition row is {id, split, ab_domain} with ab_domain e.g. A_film_tv."
            )
        if row.get("split") not in out or row.get("id") not in claims:
            raise ConfigError(
                f"memarena: {path}:{lineno}: id {row.get('id')!r} (split "
                f"{row.get('split')!r}) is not in {claims_path} or has no train/test split."
            )
        out[row["split"]].append({**claims[row["id"]], "ab_domain": row["ab_domain"]})
    return out
