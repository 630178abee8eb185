"""Per-domain memories for any method (memory/team.py, protocol.domain_memories=per_domain)."""

from __future__ import annotations

import pytest

from memarena.core import (
    ConfigError,
    Feedback,
    MemoryContext,
    MemoryFrozenError,
    MemoryMethod,
    MemoryQuery,
    Observation,
    Outcome,
    Step,
    Task,
    Trajectory,
)
from memarena.core.memory import Capabilities
from memarena.memory.team import DomainTeam


class Notes(MemoryMethod):
    """Remembers the goals it observed; shows them, and the global memory's goals after."""

    name = "notes"
    capabilities = Capabilities(has_global=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.goals: list[str] = []
        self.merged_from: list[str] = []

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        self.goals.append(trajectory.task.goal)
        self.token_usage.setdefault("write", {"calls": 0})["calls"] += 1

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return MemoryContext({"notes": " | ".join(self.goals)}, [f"n:{g}" for g in self.goals])

    def merge_domains(self, memories: dict[str, MemoryMethod]) -> None:
        self.merged_from = list(memories)
        self.goals = [g for m in memories.values() for g in m.goals]  # type: ignore[attr-defined]

    def retrieve_in_team(self, query: MemoryQuery, global_memory) -> MemoryContext:
        own = self.retrieve(query)
        theirs = global_memory.retrieve(query) if global_memory else MemoryContext.empty()
        slot = f"{own.slots['notes']} || {theirs.slots.get('notes', '')}"
        return MemoryContext({"notes": slot}, own.memory_ids + ["global"])

    def size(self) -> int:
        return len(self.goals)

    def state_dict(self) -> dict:
        return {"goals": self.goals, "merged_from": self.merged_from}

    def load_state_dict(self, state: dict) -> None:
        self.goals, self.merged_from = list(state["goals"]), list(state["merged_from"])


class LocalOnly(Notes):
    capabilities = Capabilities(has_global=False)


def group(domain: str, goal: str) -> list[tuple[Trajectory, Outcome]]:
    task = Task(f"{domain}/{goal}", "fake", "train", domain, goal)
    step = Step("act", "ok", 1.0, 1.0, Feedback(True, True))
    return [(Trajectory(task, "start", [step]), Outcome(True, 1.0, 1, "success"))]


def ask(domain: str) -> MemoryQuery:
    return MemoryQuery(Task(f"q/{domain}", "fake", "test", domain, "?"), Observation("o", "?"))


def trained(cls=Notes) -> DomainTeam:
    team = DomainTeam(cls)
    team.begin_phase("acquire")
    team.observe_groups([group("a", "g1"), group("b", "g2"), group("a", "g3")])
    return team


def test_each_domain_learns_its_own_tasks_and_reads_only_its_memory_while_acquiring():
    team = trained()
    assert {d: m.goals for d, m in team.domains.items()} == {"a": ["g1", "g3"], "b": ["g2"]}
    context = team.retrieve(ask("a"))
    assert context.slots == {"notes": "g1 | g3"} and "global" not in context.memory_ids
    assert team.retrieve(ask("c")) == MemoryContext.empty()  # a domain with no memory
    assert team.global_memory is None  # nothing global before acquisition ends


def test_the_global_memory_is_merged_once_acquisition_ends_and_every_view_sees_it():
    team = trained()
    team.begin_phase("eval")
    team.freeze()
    assert team.global_memory is not None and team.global_memory.merged_from == ["a", "b"]
    assert team.eval_views() == ["a", "b"]
    team.set_view("b")  # b's agent on a test task of domain a: its own memory + the global one
    assert team.retrieve(ask("a")).slots == {"notes": "g2 || g1 | g3 | g2"}
    with pytest.raises(ConfigError, match="no domain memory 'z'"):
        team.set_view("z")
    with pytest.raises(MemoryFrozenError):
        team.observe_groups([group("a", "g4")])
    assert team.size() == 3 + 3
    assert team.token_usage == {"write": {"calls": 3}}
    assert team.metrics()["domain_memories"] == 2


def test_a_method_without_a_global_memory_shows_its_own_domain_only():
    team = trained(LocalOnly)
    team.begin_phase("eval")
    team.set_view("a")
    assert team.global_memory is None
    assert team.retrieve(ask("b")).slots == {"notes": "g1 | g3 || "}


def test_the_snapshot_holds_every_domain_memory_and_the_global_one(tmp_path):
    team = trained()
    team.save(tmp_path)
    again = DomainTeam(Notes)
    again.load(tmp_path)
    again.begin_phase("eval")
    again.set_view("a")
    team.begin_phase("eval")
    team.set_view("a")
    assert again.retrieve(ask("b")) == team.retrieve(ask("b"))
    pooled = Notes()
    pooled.save(tmp_path / "pooled")
    with pytest.raises(ConfigError, match="one pooled memory"):
        DomainTeam(Notes).load(tmp_path / "pooled")


def test_domains_keep_the_order_of_the_train_tasks_and_the_merge_reads_them_so():
    team = DomainTeam(Notes)
    team.begin_phase("acquire")
    team.observe_groups([group("gripper", "g1"), group("barman", "g2")])
    assert team.size() == 2 and team.global_memory is None  # live metrics build nothing
    team.begin_phase("eval")
    assert team.global_memory.merged_from == ["gripper", "barman"]
    assert team.global_memory.goals == ["g1", "g2"]
