"""Per-domain memories for any method: MemCo's multi-domain protocol
(``protocol.domain_memories: per_domain``).

In MemCo's evaluation every method is trained one source domain at a time into that domain's
own memory; when every domain is done a global memory is built from all of them (for the
methods that have one); then each domain's agent is evaluated on the merged test set with its
own memory plus the global one (MemCo's code, ``scripts/eval_collab_multidomain_global.py``).
:class:`DomainTeam` runs a method that way through the ordinary pipeline: it is a
:class:`~memarena.core.MemoryMethod` holding one instance of the method per ``task.domain``.

- Acquisition: a trajectory is observed by its task's domain memory only, and a retrieval reads
  that memory only (no global memory exists yet), so the order of domains does not matter.
- The global memory: after acquisition (when the snapshot is written, or evaluation begins), a
  fresh instance whose ``merge_domains`` reads every domain's memory; only for a method with
  ``has_global``. Rebuilt whenever a domain memory changed since.
- Evaluation: one view per domain (``eval_views``); a view's retrievals go to
  ``retrieve_in_team`` of that domain's memory with the global one, for every test task.
- Snapshot: one ``memory.json`` holding every domain memory's state and the global memory's.

A method that keeps per-domain memories itself (MemCo: ``own_domain_memories``) is not wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.core.costs import add_into, counters, difference, negated

Factory = Callable[[], MemoryMethod]


class DomainTeam(MemoryMethod):
    """One memory of the method per source domain, and its global memory (module docstring).
    ``factory`` builds a fresh instance of the method (with the run's config); ``first`` is
    one already built, used as the first domain's memory."""

    def __init__(self, factory: Factory, first: MemoryMethod | None = None) -> None:
        model = first if first is not None else factory()
        super().__init__(name=model.name, services=model.services, env_name=model.env_name)
        # what the pipeline reads of the method, whole: its capabilities and settings
        self.schema_version = model.schema_version
        self.capabilities = model.capabilities
        self.settings, self.readings = model.settings, model.readings
        self._factory = factory
        self._package = model.package  # the snapshot's reader is the method's, not the team's
        self._spare: MemoryMethod | None = model
        self.domains: dict[str, MemoryMethod] = {}
        self.global_memory: MemoryMethod | None = None
        self._stale = True  # the global memory does not reflect the domain memories
        # what the global memories a rebuild replaced had spent: the team's counters only grow
        self._retired: dict = {"usage": {}, "fallbacks": {}}
        self._view: str | None = None

    # -- members ------------------------------------------------------------------------------
    def _new(self) -> MemoryMethod:
        """A fresh instance of the method (the one built at construction first)."""
        member = self._spare if self._spare is not None else self._factory()
        self._spare = None
        member.begin_phase(self.phase)
        return member

    def member(self, domain: str) -> MemoryMethod:
        """The memory of ``domain``, created empty on first use."""
        if domain not in self.domains:  # kept in the order domains first appear (the lists')
            self.domains[domain] = self._new()
        return self.domains[domain]

    def _members(self) -> list[MemoryMethod]:
        return [*self.domains.values(), *([self.global_memory] if self.global_memory else [])]

    def build_global(self) -> MemoryMethod | None:
        """The global memory merged from every domain memory, in the order the domains first
        appeared in the train tasks (MemCo's code trains and merges them in its lists' order);
        None without ``has_global``. Built when the snapshot is written and when evaluation
        begins, never for a retrieval while acquiring."""
        if self._stale:
            add_into(self._retired, counters(self.global_memory))
            self.global_memory = None
            if self.has_global and self.domains:
                merged = self._new()
                merged.merge_domains(dict(self.domains))
                merged.freeze()
                self.global_memory = merged
            self._stale = False
        return self.global_memory

    # -- acquisition --------------------------------------------------------------------------
    def begin_phase(self, phase: str) -> None:
        super().begin_phase(phase)
        for member in self.domains.values():
            member.begin_phase(phase)
        if phase == "eval":
            self.build_global()

    def observe_groups(self, groups: list[list[tuple[Trajectory, Outcome]]]) -> None:
        self.refuse_if_frozen()
        by_domain: dict[str, list[list[tuple[Trajectory, Outcome]]]] = {}
        for group in groups:
            if group:
                by_domain.setdefault(self._domain_of(group[0][0].task.domain), []).append(group)
        for domain, mine in by_domain.items():
            self.member(domain).observe_groups(mine)
        if by_domain:
            self._stale = True

    def _domain_of(self, task_domain: str) -> str:
        """Whose memory learns: during evaluation (a learning run) the view's agent."""
        return self._view if self._view is not None else task_domain

    # -- evaluation ---------------------------------------------------------------------------
    def eval_views(self) -> list[str | None]:
        return list(self.domains) or [None]

    def set_view(self, view: str | None) -> None:
        if view is not None and view not in self.domains:
            raise ConfigError(
                f"memarena: {self.name} has no domain memory {view!r}; domains: "
                f"{list(self.domains)}."
            )
        self._view = view

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        out: list[MemoryContext] = [MemoryContext.empty()] * len(queries)
        asked: dict[str, list[int]] = {}
        for i, query in enumerate(queries):
            domain = self._domain_of(query.task.domain)
            if domain in self.domains:
                asked.setdefault(domain, []).append(i)
        for domain, rows in asked.items():
            member = self.domains[domain]
            mine = [queries[i] for i in rows]
            if self.phase == "acquire":  # the domain's own memory only: no global memory yet
                contexts = member.retrieve_batch(mine)
            else:
                merged = self.build_global()
                contexts = [member.retrieve_in_team(q, merged) for q in mine]
            for i, context in zip(rows, contexts, strict=True):
                out[i] = context
        return out

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """A recorded retrieval, replayed on the memory it was asked of: the task's domain
        memory (while evaluating, the view's). While evaluating, the retrieval first rebuilt
        the global memory when a domain memory had learned since (:meth:`build_global`): the
        replay rebuilds it at the same point, so the global memory, and what its rebuild
        cost, follow the uninterrupted run, and the member gets back the rest of the
        record's cost (a wave's cost is shared evenly among its records, so one record's
        rest may be negative; the wave's sum is exact)."""
        member = self.domains.get(self._domain_of(trajectory.task.domain))
        if member is None:
            return
        if self.phase == "acquire":  # the domain's own memory only, as retrieve_batch asks it
            member.replay_retrieval(trajectory, spent)
            return
        before = counters(self)
        merged = self.build_global()
        rebuilt = difference(counters(self), before)
        spent = add_into(add_into({}, spent), negated(rebuilt))
        member.replay_retrieval_in_team(trajectory, spent, merged)

    def reflect(
        self, failures: list[tuple[Trajectory, Outcome]], attempt: int
    ) -> list[MemoryContext | None]:
        out: list[MemoryContext | None] = []
        for trajectory, outcome in failures:
            domain = self._domain_of(trajectory.task.domain)
            member = self.domains.get(domain)
            out += member.reflect([(trajectory, outcome)], attempt) if member else [None]
        return out

    def replay_retry_retrieval(self, trajectory: Trajectory, context: MemoryContext) -> None:
        member = self.domains.get(self._domain_of(trajectory.task.domain))
        if member is not None:
            member.replay_retry_retrieval(trajectory, context)

    def observe_retry(
        self, trajectory: Trajectory, outcome: Outcome, attempt: int, context: MemoryContext
    ) -> None:
        self.member(self._domain_of(trajectory.task.domain)).observe_retry(
            trajectory, outcome, attempt, context
        )
        self._stale = True

    def freeze(self) -> None:
        self.build_global()
        for member in self._members():
            member.freeze()
        super().freeze()

    # -- metrics and tokens -------------------------------------------------------------------
    @property  # type: ignore[override]
    def token_usage(self) -> dict[str, dict[str, int]]:
        """Every member's LLM usage per purpose, summed (the team makes no call itself), with
        what the global memories since replaced by a rebuild had spent."""
        total: dict[str, dict[str, int]] = add_into({}, self._retired["usage"])
        for member in self._members():
            for purpose, usage in member.token_usage.items():
                mine = total.setdefault(purpose, {})
                for key, value in usage.items():
                    mine[key] = mine.get(key, 0) + value
        return total

    @token_usage.setter
    def token_usage(self, value: dict[str, dict[str, int]]) -> None:
        if value:
            raise ConfigError("memarena: a domain team's token usage is its members'")

    @property  # type: ignore[override]
    def fallbacks(self) -> dict[str, int]:
        total: dict[str, int] = add_into({}, self._retired["fallbacks"])
        for member in self._members():
            for kind, n in (member.fallbacks or {}).items():
                total[kind] = total.get(kind, 0) + n
        return total

    @fallbacks.setter
    def fallbacks(self, value: dict[str, int]) -> None:
        if value:
            raise ConfigError("memarena: a domain team's fallbacks are its members'")

    def metrics(self) -> dict[str, Any]:
        """The members' numeric metrics summed, the number of domain memories and the global
        memory's size."""
        out: dict[str, Any] = {}
        for member in self.domains.values():
            for key, value in member.metrics().items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    out[key] = out.get(key, 0) + value
        out["domain_memories"] = len(self.domains)
        merged = self.global_memory if self.phase == "acquire" else self.build_global()
        if merged is not None:
            out["global_entries"] = merged.size() or 0
        return out

    def size(self) -> int | None:
        """Entries of every domain memory plus the global memory's as last built. Never builds
        it: the live progress line asks after every episode, and a rebuild there (LLM calls
        outside any measured window, at moments a resumed run does not repeat) would change
        when the global memory learns and what the records say it cost."""
        sizes = [m.size() for m in self.domains.values()]
        if not sizes or all(s is None for s in sizes):
            return None
        merged = self.global_memory
        extra = (merged.size() or 0) if merged is not None else 0
        return sum(s or 0 for s in sizes) + extra

    # -- snapshot -----------------------------------------------------------------------------
    @property
    def package(self) -> str:
        return self._package

    def state_dict(self) -> dict[str, Any]:
        # the domain memories first: writing a snapshot may finish a member's acquisition
        # (MemSkill rebuilds its memory from replay), and the global memory merges what it left
        domains = {d: m.state_dict() for d, m in self.domains.items()}
        self._stale = self._stale or self.phase == "acquire"
        merged = self.build_global()
        out = {
            "domain_memories": domains,
            "global": merged.state_dict() if merged is not None else None,
        }
        if self._retired["usage"] or self._retired["fallbacks"]:
            out["retired_global_cost"] = add_into({}, self._retired)
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "domain_memories" not in state:
            raise ConfigError(
                f"memarena: this {self.name} snapshot holds one pooled memory, not per-domain "
                "memories; evaluate it with protocol.domain_memories=pooled, or acquire again."
            )
        self.domains = {}
        self._retired = add_into({"usage": {}, "fallbacks": {}}, state.get("retired_global_cost"))
        for domain, member_state in state["domain_memories"].items():
            self.member(domain).load_state_dict(member_state)
        self.global_memory = None
        if state.get("global") is not None:
            merged = self._new()
            merged.load_state_dict(state["global"])
            merged.freeze()
            self.global_memory = merged
            self._stale = False
        else:
            self._stale = True
