"""ReMe's released experience pools (agentscope-ai/ReMe ``docs/library/paper_data/task/
bfcl_qwen3_{8b,14b,32b}.jsonl``: 96 / 110 / 99 experiences, built 2025-09-20 by code the repository
does not hold) as memarena experiences.

One JSON object per line: ``workspace_id``, ``memory_id`` (the id kept here and shown in the
records), ``memory_type``, ``when_to_use`` (the usage scenario, ReMe's index), ``content``,
``score``, ``time_created`` / ``time_modified``, ``author`` and ``metadata``, which holds the
experience's type (``category``: success / failure / comparative), the source ``task_query``,
its ``generalized_query`` and the usage counts ``freq`` (f) and ``utility`` (u). Every line is
also kept whole on the experience (``Experience.released``), so nothing of the file is lost and
:meth:`Experience.to_released` gives the line back with the counts as they are now.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memarena.core import ConfigError
from memarena.core.jsonl import numbered_lines
from memarena.memory.reme.experience import Experience

REQUIRED = ("memory_id", "when_to_use", "content")


def read_pool(path: Path) -> list[Experience]:
    """The experiences of a released pool file, in file order; a ConfigError naming the line
    and the missing field for a file that is not one."""
    out = []
    for number, line in numbered_lines(Path(path).read_text(encoding="utf-8")):
        try:
            record = json.loads(line)
        except ValueError as err:
            raise ConfigError(f"memarena: {path} line {number} is not JSON ({err}).") from None
        missing = [k for k in REQUIRED if not isinstance(record, dict) or k not in record]
        if missing:
            raise ConfigError(
                f"memarena: {path} line {number} lacks {missing}: not a ReMe experience pool "
                "(docs/library/paper_data/task/*.jsonl in agentscope-ai/ReMe)."
            )
        out.append(_experience(record))
    if not out:
        raise ConfigError(f"memarena: {path} holds no experience.")
    return out


def _experience(record: dict[str, Any]) -> Experience:
    meta = record.get("metadata") or {}
    return Experience(
        id=str(record["memory_id"]),
        when_to_use=str(record["when_to_use"]),
        content=str(record["content"]),
        kind=str(meta.get("category") or "success"),
        task_query=str(meta.get("task_query") or ""),
        generalized_query=str(meta.get("generalized_query") or ""),
        retrievals=int(meta.get("freq") or 0),
        utility=int(meta.get("utility") or 0),
        released=record,
    )
