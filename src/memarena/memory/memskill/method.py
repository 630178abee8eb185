"""``MemSkill`` (Zhang et al., 2026; MemCo's baseline) as ``method=memskill``, run the way MemCo
ran it (its ``mas/memory/mas_memory/memskill.py`` and ``scripts/run_memskill_qwen32b_api_fever_
pddl.sh``), with MemSkill's own reading one key away (``conf/method/memskill.yaml``).

Writing (per observed wave; :mod:`.banks`, :mod:`.controller`):

1. a task is one span (its trajectory rendered, clipped to ``span_chars``; MemCo's code keeps a
   whole episode as one chunk, ``memskill_chunk_chars`` 0);
2. success-only: a failed task is not written; it joins the failure pool (the latest
   ``failure_pool``, 200: ``memskill_failure_pool_size``), the designer's evidence and the
   source of the evaluation hint. MemSkill's own trainer writes every span (key
   ``success_only: false``);
3. the ``top_k`` (5) items nearest to the span are shown; the controller picks
   ``skills_per_span`` (3) skills: ``controller: released`` (MemCo's runs,
   ``method=memskill_as_released``: MemSkill's released ALFWorld checkpoint with its operation
   bank and its encoders, loaded and never trained, the largest logits; :mod:`.released`),
   ``ppo`` (a controller trained here on the train split while acquiring, :mod:`.ppo`) or
   ``llm`` (one batched memory-LLM call);
4. the executor (memory LLM) turns the span, the shown items and the selected skills into
   INSERT / UPDATE / DELETE / NOOP operations, one batched call; NOOP-only selections make no
   call (MemCo's executor drops NOOP skills and answers NOOP when none is left);
5. the designer is off unless ``designer: true`` (MemCo: ``memskill_enable_designer``); then
   every ``design_every`` (20, ``memskill_designer_freq``) tasks, with at least
   ``designer_min_failures`` (3) failures, it proposes at most ``designer_changes`` skill
   additions or refinements from the last ``designer_cases`` (5) failures.

End of acquisition (:meth:`MemSkill.finish_acquisition`, run when the snapshot is taken or
evaluation begins, whichever comes first): the PPO episodes left make a last update, then the
controller is frozen; with ``finalize_local`` (MemCo's ``--memskill_finalize_local``) the memory
and the failure pool are rebuilt from the replay of every observed task, in order, with the
frozen controller (``rebuild_batch`` spans per call; MemCo: one at a time).

Retrieval for the agent, once per task: the ``top_k_eval`` (1: MemCo's ``successful_topk``)
items nearest to the goal (``acquire_top_k`` while acquiring, null = the same), plus, while the
failure pool holds a case, a generic hint to avoid the action patterns of similar failed
episodes (``failure_hint``; MemCo retrieves ``failed_topk`` 1 failure and shows only that
hint). Under per-domain memories (MemCo's protocol) the global memory is every domain's items
and failures merged (:meth:`MemSkill.merge_domains`; ``global_build: rerun``, MemCo's eval
script's ``add_memory_from_peer``: every domain's saved episodes written again through the
controller and the executor, each with a "Source domain" line) and evaluation reads it alone
(:meth:`MemSkill.retrieve_in_team`), as MemCo's ``set_global_retriever`` does.

Unusable answers are counted fallbacks: an LLM controller answer falls back to the bank's first
skills, an executor answer to no operation; an invalid operation (bad index, empty content) is
counted and skipped. Left out: MemSkill's new-skill exploration bias in the policy and the
design-stage snapshot/rollback (they act with its designer and batch-B loop), per-skill reward
statistics (MemCo's ``backward``: they only rank skills for eviction from a full bank).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Trajectory
from memarena.core.memory import Capabilities
from memarena.core.settings import reading
from memarena.core.typecheck import Count, Positive
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    json_request,
    stored_tasks,
)
from memarena.memory.llm_calls import clip_text
from memarena.memory.memskill import prompts
from memarena.memory.memskill.banks import ItemBank, SkillBank
from memarena.memory.memskill.controller import (
    Choice,
    PPOController,
    llm_select,
)
from memarena.memory.memskill.ppo import PPOConfig, ShapingConfig
from memarena.memory.memskill.released import ReleasedController, load_checkpoint

FAILURE_TEXT_CHARS = 1000  # a failure case's trajectory as the designer reads it


@dataclass
class Span:
    """One observed task as MemSkill writes it (also the replay's row)."""

    goal: str
    text: str
    success: bool


def _options(cls: type, given: Any, key: str) -> Any:
    """A dataclass from a mapping of its fields (a config error names the valid ones)."""
    given = dict(given or {})
    valid = [f.name for f in fields(cls)]
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise ConfigError(f"memarena: method.{key} has no key(s) {unknown}; valid keys: {valid}.")
    return cls(**given)


@dataclass(frozen=True)
class MemSkillSettings(BaselineSettings):
    """MemSkill's keys (``conf/method/memskill.yaml`` gives each one's source)."""

    mode: Literal["skills"] = "skills"
    # released: MemSkill's released controller loaded from ``checkpoint``, frozen (MemCo's
    # runs); ppo: a controller trained here while acquiring; llm: the memory LLM picks
    controller: Literal["ppo", "llm", "released"] = reading(
        "ppo", memco_released="released", memarena="ppo"
    )
    checkpoint: str | None = None  # the released controller's .pt file (controller: released)
    operation_bank: str | None = None  # a bank file replacing the checkpoint's (JSON or .pt)
    encoder: str | None = None  # replaces the checkpoint's encoder names (e.g. a local copy)
    # how the global memory is built under per-domain memories: copy every domain's items
    # (memarena), or write every domain's saved episodes again through controller and executor
    # with a "Source domain" line (MemCo's eval script: add_memory_from_peer)
    global_build: Literal["copy", "rerun"] = reading(
        "copy", memco_released="rerun", memarena="copy"
    )
    top_k_eval: Count = 1
    acquire_top_k: Count | None = None  # null: top_k_eval
    skills_per_span: Positive = 3
    max_skills: Positive = 30
    success_only: bool = True
    failure_pool: Count = 200
    failure_hint: bool = True
    designer: bool = False
    design_every: Positive = 20
    designer_changes: Count = 3
    designer_min_failures: Count = 3
    designer_cases: Count = 5
    finalize_local: bool = True
    rebuild_batch: Positive = 1
    replay_pool: Count = 5000
    span_chars: Positive = 3000
    seed: int = 0
    ppo: Any = None  # PPOConfig's keys (controller.py)
    shaping: Any = None  # ShapingConfig's keys


class MemSkill(ModalBaseline):
    """MemSkill as MemCo ran it (module docstring; parameters in ``conf/method/memskill.yaml``,
    each with MemCo's code value and MemSkill's own reading)."""

    name = "memskill"
    schema_version = 2
    MODES = ("skills",)
    DEFAULT_TOP_K = {"skills": 5}
    PURPOSES = ("controller", "executor", "designer")
    COUNTS = ("spans", "insert", "update", "delete", "noop", "invalid", "designs",
              "skill_changes", "rebuilds", "ppo_updates")  # fmt: skip
    capabilities = Capabilities(has_global=True)

    Settings = MemSkillSettings

    def __init__(self, settings: MemSkillSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: MemSkillSettings = self.settings
        self.controller = s.controller
        self.top_k_eval = s.top_k_eval
        self.acquire_top_k = self.top_k_eval if s.acquire_top_k is None else s.acquire_top_k
        self.skills_per_span = s.skills_per_span
        self.success_only, self.failure_hint = s.success_only, s.failure_hint
        self.failure_pool_size = s.failure_pool
        self.designer, self.design_every = s.designer, s.design_every
        self.designer_changes = s.designer_changes
        self.designer_min_failures, self.designer_cases = s.designer_min_failures, s.designer_cases
        self.finalize_local, self.rebuild_batch = s.finalize_local, s.rebuild_batch
        self.replay_pool = s.replay_pool
        self.span_chars = s.span_chars
        cfg = _options(PPOConfig, s.ppo, "ppo")
        cfg.top_k = self.skills_per_span
        self.ppo = PPOController(cfg, _options(ShapingConfig, s.shaping, "shaping"), s.seed)
        self.skills = SkillBank(max_skills=s.max_skills)
        self.global_build = s.global_build
        self.released: ReleasedController | None = None
        if self.controller == "released":  # refused before any work when the file is missing
            checkpoint = load_checkpoint(s.checkpoint, s.operation_bank, s.encoder)
            self.released = ReleasedController(checkpoint, self.skills_per_span)
            self.skills = SkillBank(checkpoint.skills, max_skills=s.max_skills)
        self.memory = ItemBank()
        self.failures: list[dict[str, str]] = []
        self.replay: list[dict[str, Any]] = []
        self.finished = False  # acquisition finished: controller frozen, memory finalized
        self.revision = 0  # bumped by every change of the items or failures (in process only)
        self._rebuilding = False
        self._sources: dict[str, MemSkill] = {}  # the global memory's domain memories
        self._merged: dict[str, int] = {}  # their revisions when merged

    # -- LLM requests (also used by :func:`.controller.llm_select`) ----------------------------
    def request(self, purpose: str, system: str, user: str, schema: dict[str, Any]) -> Any:
        return json_request(system, user, schema, self.token_caps[purpose], self.temperature)

    def ask(self, purpose: str, requests: list[Any]) -> list[Any]:
        return self._ask(purpose, requests)

    def _embed(self, text: str) -> np.ndarray:
        return self.services.embedder.encode([text])[0]

    # -- writing -------------------------------------------------------------------------------
    def _learning(self) -> bool:
        """The PPO controller samples and learns: acquiring, not frozen, not rebuilding."""
        return (
            self.controller == "ppo"
            and self.phase == "acquire"
            and not (self.frozen or self.finished or self._rebuilding)
        )

    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        before = self.clock
        tasks, self.clock = stored_tasks(groups, self.clock)
        if not tasks:
            return
        if self.phase == "acquire":
            self.finished = False
        spans = [
            Span(t.goal, t.render(self.observation_chars)[: self.span_chars], t.success)
            for t in tasks
        ]
        if self._learning():  # these tasks read what the last wave wrote: its delayed reward
            self._note_update(self.ppo.close_episode(float(np.mean([s.success for s in spans]))))
        if self.phase == "acquire" and self.finalize_local:
            self.replay = (self.replay + [asdict(s) for s in spans])[-self.replay_pool :]
        self._write(spans, learn=self._learning())
        due = self.clock // self.design_every > before // self.design_every
        if self.designer and due and len(self.failures) >= self.designer_min_failures:
            self.design()

    def _note_update(self, info: dict[str, float]) -> None:
        if info:
            self.counts["ppo_updates"] += 1

    def _write(self, spans: list[Span], learn: bool) -> None:
        """Failures to the pool, the (successful) spans through controller and executor."""
        self.revision += 1
        for s in spans:
            if not s.success:
                self.failures.append(
                    {"goal": s.goal, "text": clip_text(s.text, FAILURE_TEXT_CHARS)}
                )
        self.failures = self.failures[-self.failure_pool_size :] if self.failure_pool_size else []
        written = [s for s in spans if s.success or not self.success_only]
        if not written:
            return
        vectors = self.services.embedder.encode([s.text for s in written])
        shown = [self.memory.search(v, self.top_k) for v in vectors]
        choices = self._choose(written, vectors, shown, learn)
        results = self._execute(written, shown, choices)
        if learn:
            ops_of = {name: skill.op for name, skill in self.skills.skills.items()}
            self.ppo.record(choices, results, ops_of)

    def _listing(self, ids: list[str]) -> str:
        lines = [f"{n}. {self.memory.items[i]}" for n, i in enumerate(ids, 1)]
        return "\n".join(lines) or "(none)"

    def _choose(
        self, spans: list[Span], vectors: np.ndarray, shown: list[list[str]], learn: bool
    ) -> list[Choice]:
        if self.controller == "llm":
            listings = [self._listing(ids) for ids in shown]
            choices = llm_select(self, [s.goal for s in spans], [s.text for s in spans], listings)
        elif self.released is not None:
            choices = self._released_choices(spans, shown)
        else:
            skills = list(self.skills.skills.values())
            ops = self.ppo.skill_matrix(skills, self.services.embedder.encode)
            states = [
                PPOController.state(v, [self.memory.vector(i) for i in ids])
                for v, ids in zip(vectors, shown, strict=True)
            ]
            choices = self.ppo.select(states, ops, skills, learn)
        for choice in choices:
            for name in choice.names:
                self.skills.skills[name].uses += 1
        return choices

    def _released_choices(self, spans: list[Span], shown: list[list[str]]) -> list[Choice]:
        """The released controller: the span and the shown items through its state encoder,
        the skills' descriptions through its operation encoder, the k largest logits."""
        ckpt = self.released.checkpoint
        state_encoder = self._encoder(ckpt.state_encoder)
        texts = [s.text for s in spans]
        items = [[self.memory.items[i] for i in ids] for ids in shown]
        vectors = state_encoder.encode(texts + [t for group in items for t in group])
        start, groups = len(texts), []
        for group in items:
            groups.append(list(vectors[start : start + len(group)]))
            start += len(group)
        skills = list(self.skills.skills.values())
        names = self.released.select(
            vectors[: len(texts)], groups, skills, self._encoder(ckpt.op_encoder).encode
        )
        return [Choice(n) for n in names]

    def _encoder(self, model: str) -> Any:
        """The configured embedder with the checkpoint's model (raw, not normalised, as MemCo's
        adapter encodes), built on first use by the services."""
        return self.services.embedder_for(model, normalize=False)

    def _execute(
        self, spans: list[Span], shown: list[list[str]], choices: list[Choice]
    ) -> list[list[tuple[str, bool]]]:
        """Apply the executor's operations span by span; per span the results ``(operation,
        applied)`` the process reward reads (an unparsable answer: one failed NOOP)."""
        bank = self.skills.skills
        acting = [[n for n in c.names if bank[n].op != "noop"] for c in choices]
        asked = [i for i, names in enumerate(acting) if names]
        requests = [
            self.request(
                "executor",
                prompts.EXECUTOR_SYSTEM,
                prompts.EXECUTOR_USER.format(
                    goal=spans[i].goal,
                    span=spans[i].text,
                    memories=self._listing(shown[i]),
                    skills="\n".join(bank[n].render() for n in acting[i]),
                ),
                prompts.executor_schema(len(shown[i])),
            )
            for i in asked
        ]
        answers = dict(zip(asked, self.ask("executor", requests) if requests else [], strict=True))
        results: list[list[tuple[str, bool]]] = []
        for i in range(len(spans)):
            self.counts["spans"] += 1
            if i not in answers:  # NOOP skills only: no call
                self.counts["noop"] += 1
                results.append([("noop", True)])
                continue
            operations = answers[i].get("operations") if isinstance(answers[i], dict) else None
            if not isinstance(operations, list):
                results.append([("noop", False)])  # unparsable: counted by the batch
                continue
            done = []
            for op in operations:
                outcome = self.memory.apply(op, shown[i], self._embed)
                self.counts[outcome] += 1
                claimed = str(op.get("op", "")).lower() if isinstance(op, dict) else ""
                done.append((claimed if outcome == "invalid" else outcome, outcome != "invalid"))
            results.append(done)
        return results

    def design(self) -> int:
        """One designer round over the last failure cases; the number of skills changed."""
        self.counts["designs"] += 1
        cases = self.failures[-self.designer_cases :]
        request = self.request(
            "designer",
            prompts.DESIGNER_SYSTEM.format(n=self.designer_changes),
            prompts.DESIGNER_USER.format(
                skills="\n".join(s.render() for s in self.skills.skills.values()),
                cases="\n\n".join(f"Task: {c['goal']}\n{c['text']}" for c in cases),
            ),
            prompts.designer_schema(self.designer_changes),
        )
        (answer,) = self.ask("designer", [request])
        changes = answer.get("changes") if isinstance(answer, dict) else None
        changed = [self.skills.change(c) for c in (changes or [])[: self.designer_changes]]
        made = sum(c is not None for c in changed)
        self.counts["skill_changes"] += made
        return made

    # -- end of acquisition --------------------------------------------------------------------
    def finish_acquisition(self) -> None:
        """Once, when acquisition ends: the last PPO update (the controller is frozen after
        it), then with ``finalize_local`` the memory rebuilt from the replay."""
        if self.finished:
            return
        self.finished = True
        if self.controller == "ppo":
            self._note_update(self.ppo.flush())
        if self.finalize_local and self.replay:
            self.rebuild()

    def rebuild(self) -> None:
        """MemCo's ``finalize_training``: empty the memory and the failure pool and write every
        replayed task again, in order, with the frozen controller and no designer."""
        self._rebuilding = True
        try:
            self.memory, self.failures = ItemBank(), []
            spans = [Span(**row) for row in self.replay]
            for start in range(0, len(spans), self.rebuild_batch):
                self._write(spans[start : start + self.rebuild_batch], learn=False)
            self.counts["rebuilds"] += 1
        finally:
            self._rebuilding = False

    def begin_phase(self, phase: str) -> None:
        if phase == "eval" and self.phase == "acquire":
            self.finish_acquisition()
        super().begin_phase(phase)

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[Any, Any]]:
        items = self.memory.items
        return [(self.memory.index, lambda ids: [items[i] for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        self._refresh()
        k = self.top_k_eval if self.phase == "eval" else self.acquire_top_k
        return self.contexts(queries, k)

    def contexts(self, queries: list[MemoryQuery], k: int) -> list[MemoryContext]:
        """The ``k`` items nearest to each goal and, while the failure pool holds a case, the
        generic failure hint."""
        hint = self.failure_hint and bool(self.failures)
        if not queries or ((not len(self.memory) or k <= 0) and not hint):
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries]) if len(self.memory) else None
        out = []
        for n in range(len(queries)):
            ids = self.memory.search(vectors[n], k) if vectors is not None else []
            slots = {}
            if ids:
                body = "\n".join(f"- {self.memory.items[i]}" for i in ids)
                slots["memskill_items"] = f"{prompts.MEMORY_HEADER}\n{body}"
            if hint:
                slots["memskill_hint"] = prompts.FAILURE_HINT
            out.append(MemoryContext(slots=slots, memory_ids=ids))
        return out

    # -- per-domain memories (MemCo's protocol) ------------------------------------------------
    def merge_domains(self, memories: dict[str, MemoryMethod]) -> None:
        """This fresh instance becomes the global memory: every domain memory's items (ids
        ``<domain>/<id>``, their stored embeddings) and failure cases, domains in order, the
        pool trimmed to the latest ``failure_pool`` (MemCo: ``add_memory_items_from_peer`` /
        ``add_failure_cases_from_peer`` of each finalized local memory). Cheap (no model
        call); it reads the domain memories and never changes them, and is redone when one of
        them has changed since (e.g. finalized after the merge)."""
        for domain, memory in memories.items():
            if not isinstance(memory, MemSkill):
                raise ConfigError(
                    f"memarena: memskill cannot merge a {type(memory).__name__} ({domain!r})."
                )
        self._sources = dict(memories)  # in the order given (the train lists' domains)
        self._merge()

    def _merge(self) -> None:
        self.memory, self.failures = ItemBank(), []
        if self.global_build == "rerun":
            self._rerun_sources()
        else:
            for domain, source in self._sources.items():
                for item_id, text in source.memory.items.items():
                    self.memory.add(f"{domain}/{item_id}", text, source.memory.vector(item_id))
                self.failures += [{**f, "source": domain} for f in source.failures]
        self.failures = self.failures[-self.failure_pool_size :] if self.failure_pool_size else []
        self._merged = {d: m.revision for d, m in self._sources.items()}
        self.finished = True
        self.revision += 1

    def _rerun_sources(self) -> None:
        """MemCo's global MemSkill (``add_memory_from_peer``): every domain's saved episodes,
        domains in order and each domain's in the order observed, written again one at a time
        through the controller and the executor, each span ending with its source domain."""
        self._rebuilding = True
        try:
            for domain, source in self._sources.items():
                if not source.replay:
                    raise ConfigError(
                        f"memarena: method.global_build=rerun writes every domain's saved "
                        f"episodes again, but domain {domain!r} kept none (method."
                        "finalize_local=false, or nothing observed); use method.global_build=copy."
                    )
                for row in source.replay:
                    span = Span(**row)
                    span.text = f"{span.text}\nSource domain: {domain}"
                    self._write([span], learn=False)
        finally:
            self._rebuilding = False

    def _refresh(self) -> None:
        if any(m.revision != self._merged.get(d) for d, m in self._sources.items()):
            self._merge()

    def retrieve_in_team(
        self, query: MemoryQuery, global_memory: MemoryMethod | None
    ) -> MemoryContext:
        """Evaluation under per-domain memories: the global memory's ``top_k_eval`` items and
        its failure hint (MemCo's local memory hands retrieval to its global retriever)."""
        if not isinstance(global_memory, MemSkill):
            return self.retrieve(query)
        global_memory.verify_embeddings()
        global_memory._refresh()
        return global_memory.contexts([query], global_memory.top_k_eval)[0]

    def replay_retrieval_in_team(
        self, trajectory: Trajectory, spent: Any, global_memory: MemoryMethod | None
    ) -> None:
        """On the memory :meth:`retrieve_in_team` asked: the global one when it is MemSkill's."""
        target = global_memory if isinstance(global_memory, MemSkill) else self
        target.replay_retrieval(trajectory, spent)

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": len(self.memory),
            "memory_skills": len(self.skills),
            "memory_operations": {op: self.counts[op] for op in ("insert", "update", "delete")},
            "memory_invalid_operations": self.counts["invalid"],
            "memory_skill_changes": self.counts["skill_changes"],
            "memory_failures": len(self.failures),
            "memskill_ppo_updates": self.counts["ppo_updates"],
            "memskill_ppo_episodes": self.ppo.episodes,
        }

    def size(self) -> int:
        self._refresh()
        return len(self.memory)

    def state_dict(self) -> dict[str, Any]:
        """The memory as JSON values, the PPO checkpoint with it. A snapshot taken while
        acquiring is of the finished acquisition (:meth:`finish_acquisition` runs first)."""
        if self.phase == "acquire" and not self.frozen:
            self.finish_acquisition()
        self._refresh()
        return {
            **self.common_state(),
            "controller": self.controller,
            "released_checkpoint": self._checkpoint_identity(),
            "skills": self.skills.to_dict(),
            "memory": self.memory.to_dict(self.services.embedder_if_built),
            "failures": [dict(f) for f in self.failures],
            "replay": [dict(r) for r in self.replay],
            "finished": self.finished,
            "ppo": self.ppo.to_state(),
            "merged_from": list(self._merged),
        }

    def _checkpoint_identity(self) -> dict[str, str] | None:
        """Which released controller chose the skills (its file, sha256 and encoders)."""
        if self.released is None:
            return None
        c = self.released.checkpoint
        return {"path": c.path, "sha256": c.sha256, "state_encoder": c.state_encoder,
                "op_encoder": c.op_encoder}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.skills = SkillBank.from_dict(state["skills"])
        self.memory = ItemBank.from_dict(state["memory"])
        self.failures = [dict(f) for f in state.get("failures", [])]
        self.replay = [dict(r) for r in state.get("replay", [])]
        self.finished = bool(state.get("finished", False))
        self.ppo.load_state(state.get("ppo"))
        self._sources, self._merged = {}, {}
        self.revision += 1
