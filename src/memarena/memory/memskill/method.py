"""``MemSkill`` (Zhang et al., 2026; MemCo's baseline) as ``method=memskill``, with the
LLM controller (the variant MemCo ran; MemSkill's PPO controller is left out: it needs a
trained policy network and its reward loop over interactive batches).

Writing, per observed wave (:mod:`.banks`):

1. each finished task is one span (MemSkill packs whole trajectories into chunks of a few
   hundred to 2k tokens and never splits one; here a span is one task, clipped to
   ``span_chars``), with the ``top_k`` (5) memory items nearest to its task retrieved;
2. the controller (memory LLM) selects ``skills_per_span`` (3; MemSkill's ALFWorld training
   runs select 3) skills from the skill bank for each span: one batched call;
3. the executor (memory LLM) reads the span, the shown items (numbered) and the selected skills'
   instructions and emits INSERT / UPDATE / DELETE / NOOP operations: one batched call; the
   operations are applied span by span, in order (items retrieved for a later span before an
   earlier span's operations are skipped when gone);
4. failed tasks join the hard cases (the latest ``hard_cases``, 100); every ``design_every``
   (50, memarena's choice: MemSkill runs its designer once per outer epoch) observed tasks the
   designer (memory LLM) proposes at most ``designer_changes`` (3) additions or refinements of
   skills, from the hard cases, applied to a bank of at most ``max_skills`` (30). MemSkill's
   snapshot / rollback of a design stage by its measured reward needs its batch-B reward loop
   and is left out.

Retrieval for the agent, once per task: the ``top_k`` items nearest to the task while
acquiring, ``top_k_eval`` (20, MemSkill's ALFWorld scripts) at evaluation.

Unusable answers are counted fallbacks: a controller answer falls back to the bank's first
``skills_per_span`` skills, an executor answer to no operation, an invalid operation (bad index,
empty content) is counted and skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryQuery
from memarena.memory.episodic import ModalBaseline, Pair, StoredTask, json_request, stored_tasks
from memarena.memory.llm_calls import clip_text, record_fallback
from memarena.memory.memskill import prompts
from memarena.memory.memskill.banks import ItemBank, SkillBank


class MemSkill(ModalBaseline):
    """MemSkill with an LLM controller (parameters in ``conf/method/memskill.yaml``)."""

    name = "memskill"
    schema_version = 1
    MODES = ("llm_controller",)
    DEFAULT_TOP_K = {"llm_controller": 5}
    PURPOSES = ("controller", "executor", "designer")
    COUNTS = ("spans", "insert", "update", "delete", "noop", "invalid", "designs", "skill_changes")

    def __init__(
        self,
        top_k: int | None = None,
        top_k_eval: int = 20,
        skills_per_span: int = 3,
        max_skills: int = 30,
        design_every: int = 50,
        designer_changes: int = 3,
        hard_cases: int = 100,
        span_chars: int = 3000,
        observation_chars: int = 300,
        max_tokens: Any = None,
        temperature: float = 0.0,
        observe_batch: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(top_k=top_k, observe_batch=observe_batch, **kwargs)
        if skills_per_span < 1 or design_every < 1 or top_k_eval < 0:
            raise ConfigError(
                "memarena: method=memskill needs skills_per_span >= 1, design_every >= 1 and "
                f"top_k_eval >= 0; got {skills_per_span}, {design_every}, {top_k_eval}."
            )
        self.top_k_eval, self.skills_per_span = int(top_k_eval), int(skills_per_span)
        self.design_every, self.designer_changes = int(design_every), int(designer_changes)
        self.hard_case_limit = int(hard_cases)
        self.span_chars, self.observation_chars = int(span_chars), int(observation_chars)
        self.set_token_caps(max_tokens)
        self.temperature = float(temperature)
        self.skills = SkillBank(max_skills=max_skills)
        self.memory = ItemBank()
        self.hard: list[str] = []

    def _embed(self, text: str) -> np.ndarray:
        return self.services.embedder.encode([text])[0]

    def _request(self, purpose: str, system: str, user: str, schema: dict[str, Any]) -> Any:
        return json_request(system, user, schema, self.token_caps[purpose], self.temperature)

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        before = self.clock
        tasks, self.clock = stored_tasks(groups, self.clock)
        if not tasks:
            return
        spans = [t.render(self.observation_chars)[: self.span_chars] for t in tasks]
        vectors = self.services.embedder.encode([t.goal for t in tasks])
        shown = [self.memory.search(v, self.top_k) for v in vectors]
        chosen = self._control(tasks, spans, shown)
        self._execute(tasks, spans, shown, chosen)
        for task, span in zip(tasks, spans, strict=True):
            if not task.success:
                self.hard.append(clip_text(span, 600))
        self.hard = self.hard[-self.hard_case_limit :]
        if self.clock // self.design_every > before // self.design_every and self.hard:
            self.design()

    def _listing(self, ids: list[str]) -> str:
        lines = [f"{n}. {self.memory.items[i]}" for n, i in enumerate(ids, 1)]
        return "\n".join(lines) or "(none)"

    def _control(
        self, tasks: list[StoredTask], spans: list[str], shown: list[list[str]]
    ) -> list[list[str]]:
        names = list(self.skills.skills)
        catalogue = "\n".join(s.render() for s in self.skills.skills.values())
        n = min(self.skills_per_span, len(names))
        requests = [
            self._request(
                "controller",
                prompts.CONTROLLER_SYSTEM.format(n=n),
                prompts.CONTROLLER_USER.format(
                    goal=t.goal, span=span, memories=self._listing(ids), skills=catalogue
                ),
                prompts.controller_schema(names, n),
            )
            for t, span, ids in zip(tasks, spans, shown, strict=True)
        ]
        out = []
        for answer in self._ask("controller", requests):
            raw = answer.get("skills") if isinstance(answer, dict) else None
            picked = [p for p in raw if p in self.skills.skills] if isinstance(raw, list) else []
            if not picked:
                if answer is not None:
                    record_fallback(self.services.llm, "memskill_controller_skills", self.fallbacks)
                picked = names[:n]
            picked = list(dict.fromkeys(picked))[:n]
            for name in picked:
                self.skills.skills[name].uses += 1
            out.append(picked)
        return out

    def _execute(
        self,
        tasks: list[StoredTask],
        spans: list[str],
        shown: list[list[str]],
        chosen: list[list[str]],
    ) -> None:
        requests = [
            self._request(
                "executor",
                prompts.EXECUTOR_SYSTEM,
                prompts.EXECUTOR_USER.format(
                    goal=t.goal,
                    span=span,
                    memories=self._listing(ids),
                    skills="\n".join(self.skills.skills[s].render() for s in names),
                ),
                prompts.executor_schema(len(ids)),
            )
            for t, span, ids, names in zip(tasks, spans, shown, chosen, strict=True)
        ]
        for ids, answer in zip(shown, self._ask("executor", requests), strict=True):
            self.counts["spans"] += 1
            operations = answer.get("operations") if isinstance(answer, dict) else None
            if not isinstance(operations, list):
                continue  # unparsable: counted by the batch
            for op in operations:
                done = self.memory.apply(op, ids, self._embed)
                self.counts[done] += 1

    def design(self) -> int:
        """One designer round over the hard cases; the number of skills changed."""
        self.counts["designs"] += 1
        request = self._request(
            "designer",
            prompts.DESIGNER_SYSTEM.format(n=self.designer_changes),
            prompts.DESIGNER_USER.format(
                skills="\n".join(s.render() for s in self.skills.skills.values()),
                cases="\n\n".join(self.hard[-10:]),
            ),
            prompts.designer_schema(self.designer_changes),
        )
        (answer,) = self._ask("designer", [request])
        changes = answer.get("changes") if isinstance(answer, dict) else None
        changed = [self.skills.change(c) for c in (changes or [])[: self.designer_changes]]
        made = sum(c is not None for c in changed)
        self.counts["skill_changes"] += made
        return made

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[Any, Any]]:
        items = self.memory.items
        return [(self.memory.index, lambda ids: [items[i] for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        k = self.top_k_eval if self.phase == "eval" else self.top_k
        if not queries or not len(self.memory) or k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        out = []
        for vector in vectors:
            ids = self.memory.search(vector, k)
            body = "\n".join(f"- {self.memory.items[i]}" for i in ids)
            slots = {"memskill_items": f"{prompts.MEMORY_HEADER}\n{body}"}
            out.append(MemoryContext(slots=slots, memory_ids=ids))
        return out

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": len(self.memory),
            "memory_skills": len(self.skills),
            "memory_operations": {op: self.counts[op] for op in ("insert", "update", "delete")},
            "memory_invalid_operations": self.counts["invalid"],
            "memory_skill_changes": self.counts["skill_changes"],
        }

    def size(self) -> int:
        return len(self.memory)

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "skills": self.skills.to_dict(),
            "memory": self.memory.to_dict(self.services.embedder_if_built),
            "hard": list(self.hard),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.skills = SkillBank.from_dict(state["skills"])
        self.memory = ItemBank.from_dict(state["memory"])
        self.hard = list(state.get("hard", []))
