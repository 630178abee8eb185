"""The env's ``task_list`` files: MemCo's JSON lists of ``{sw_task_name, variation_idx}``
records, or AgentBoard's ``.jsonl`` (:mod:`memarena.envs.scienceworld.agentboard`), as
:class:`~memarena.envs.scienceworld.tasks.TaskRef` lists."""

from __future__ import annotations

import json
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.envs.scienceworld.agentboard import load_agentboard
from memarena.envs.scienceworld.tasks import TaskRef, check_task_names


def load_task_list(path: str | Path) -> list[TaskRef]:
    """A JSON list of ``{sw_task_name, variation_idx[, sw_task_desc]}`` records (MemCo's
    ``collab_subsets/v4_id_grouped/*__{train,test}.json``), or AgentBoard's ``.jsonl``."""
    p = Path(path).expanduser()
    if p.suffix == ".jsonl" and p.is_file():  # AgentBoard's sciworld_test.jsonl
        return [t.ref() for t in load_agentboard(p)]
    if not p.is_file():
        raise ConfigError(
            f"memarena: env.task_list={str(p)!r} does not exist; give a JSON list of "
            "{sw_task_name, variation_idx} records (e.g. MemCo's merged__test.json) or null."
        )
    try:
        records = json.loads(p.read_text())
        refs = [
            TaskRef(
                str(r["sw_task_name"]).replace("mendellian", "mendelian"),
                int(r["variation_idx"]),
                str(r.get("sw_task_desc", "")),
            )
            for r in records
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"memarena: env.task_list={str(p)!r} is not a JSON list of "
            f"{{sw_task_name, variation_idx}} records ({exc})."
        ) from None
    check_task_names(sorted({r.task_name for r in refs}) or None)
    return refs
