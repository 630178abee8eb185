"""AgentBoard's ScienceWorld task list (``sciworld_test.jsonl``, also shipped by G-Memory).

Each line: ``{"id", "goal", "subgoals": [...], "difficulty", "additional_info": {"env_name",
"var"}}``; ``env_name`` is a ScienceWorld task name and ``var`` a variation index. Note that
AgentBoard's 90 "test" tasks use low variation indices, which lie in ScienceWorld's official
*train* split. AgentBoard's subgoals are the simulator's own replies ("You move to the
outside.", "You focus on the crocodile egg."); with ``env.progress=subgoals`` an episode's
progress is the fraction of them seen in its observations (AgentBoard's progress rate).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.core.jsonl import numbered_lines
from memarena.envs.scienceworld.tasks import TASK_FAMILY, TaskRef


@dataclass(frozen=True)
class AgentBoardTask:
    index: int
    task_name: str
    variation: int
    goal: str
    subgoals: tuple[str, ...]
    difficulty: str

    def ref(self) -> TaskRef:
        return TaskRef(self.task_name, self.variation, self.goal, self.subgoals)


def load_agentboard(path: str | Path) -> list[AgentBoardTask]:
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"memarena: AgentBoard ScienceWorld task list {str(p)!r} not found.")
    out = []
    for n, line in numbered_lines(p.read_text(encoding="utf-8")):
        try:
            r = json.loads(line)
            info = r["additional_info"]
            name = str(info["env_name"]).replace("mendellian", "mendelian")
            task = AgentBoardTask(
                int(r.get("id", n - 1)),
                name,
                int(info["var"]),
                str(r["goal"]),
                tuple(str(s) for s in r.get("subgoals", ())),
                str(r.get("difficulty", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"memarena: {p}:{n} is not an AgentBoard ScienceWorld record ({exc})."
            ) from None
        if task.task_name not in TASK_FAMILY:
            raise ConfigError(f"memarena: {p}:{n}: unknown ScienceWorld task {task.task_name!r}.")
        out.append(task)
    return out
