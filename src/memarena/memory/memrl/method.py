"""``MemRL`` (Zhang et al., 2026; MemCo's baseline) as ``method=memrl``: episodic memory with
learnt utilities, run the way MemCo's released code ran it.

Reference code (read for facts): MemCo's ``mas/memory/mas_memory/memrl_mas.py`` (SYannL/nvdamas),
which constructs MemTensor/MemRL's ``MemoryService`` (``memrl/service/memory_service.py``,
``updater.py``, ``builders.py``, ``value_driven.py``); MemRL's own runs are its
``configs/rl_*_config.yaml``.

Memory: intents (the text of a task that opened them, embedded) each holding experiences. An
experience is a finished task: a solved one with a memory-LLM *script* (3-5 high-level steps)
and its trajectory, a failed one with a memory-LLM *reflection* and the failed trajectory; it
carries a value Q (``q_init``) and a visit count.

Retrieval, once per task (:mod:`.values`):

1. cosine between the task and every intent; intents with cosine >= ``intent_threshold`` (0.5)
   are kept, the best ``top_intents`` (5);
2. their experiences are the candidates, each with its intent's cosine;
3. ``score = 0.5 z(sim) + 0.5 z(Q)``; z(Q) over the candidates clipped to +-3; z(sim) with the
   fixed statistics ``sim_mean`` / ``sim_std``, unclipped;
4. the ``top_k`` (5) best; with probability ``epsilon`` (0.1) a random sample of ``top_k``
   candidates instead (exploration), also when the memory is frozen when
   ``explore_when_frozen``.

Learning, after each task (``observe``): every experience shown to the task gets
``Q <- (1 - alpha) Q + alpha r`` with r = ``success_reward`` (+1) or ``failure_reward`` (-1) and
one more visit; the task itself is written as a new experience under the intent whose cosine to
it is at least ``merge_threshold`` (0.9; the best such), or under a new intent. The script is
asked from the trajectory alone, the reflection from the goal and the trajectory; both requests
are batched per observed wave and JSON-constrained; an unusable answer is a counted fallback
and the experience keeps its trajectory alone.

The keys where MemCo's run and MemRL's own differ (defaults: MemCo's code):

- ``sim_mean`` / ``sim_std``: 0.18568 / 0.09408, the ``MemoryService`` defaults
  (``memory_service.py:311-312``), which ``memrl_mas.py`` never overrides (they are also
  MemRL's HLE config, ``rl_hle_config.yaml:34-35``). MemRL's ALFWorld run:
  0.5187 / 0.1203 (``rl_alf_config.yaml:34-35``). null / null: the candidates' own statistics,
  clipped like Q (memarena's reading of the paper's "z-score normalisation").
- ``temperature``: per purpose. MemCo: the script at 0.7 (``memrl_mas.py:224``, the provider's
  default temperature that ``generate_script`` uses) and the reflection at 0.3 (hard-coded,
  ``updater.py:264``). MemRL's ALFWorld run: script at 0 (``rl_alf_config.yaml:7`` through
  ``run/run_alfworld.py:78``), reflection 0.3. An earlier memarena reading: 0.0 for both.
- ``explore_when_frozen``: true. The service has no frozen state: ``retrieve_query`` draws
  epsilon-greedy on every call (``memory_service.py:1468-1473``), so MemCo's frozen evaluation
  explores with epsilon 0.1 (``memrl_mas.py`` RLConfig). false: greedy when frozen (the paper's
  exploration as part of learning). MemRL's ALFWorld config sets ``epsilon: 0``.
- ``eval_memory``: ``learnt`` (the memory acquisition built; the default) or
  ``empty_as_released`` (MemCo's evaluation script builds a new memory for each evaluation,
  whose ``MemoryService`` starts with an empty intent table, and ``memrl_mas.py`` never loads a
  snapshot: every retrieval finds nothing, local and global alike). The second is what
  produced MemCo's published MemRL cells: ``method=memrl_as_released``; MemCo's table sweeps
  list both.

Rendering (``memrl_mas.py:retrieve_prompt_payload``): solved experiences become the prompt's
examples as Task / SCRIPT / TRAJECTORY (``updater.py:325`` with ``builders.py:199``); failed ones
come after a line saying similar tasks failed, each as its reflection and failed approach
(``updater.py:349-350``).

MemCo's multi-domain protocol (``has_global``): one memory per domain, then a global memory
filled by :meth:`MemRL.merge_domains` (every domain's tasks, one intent per task, Q at
``q_init``, ``memrl_mas.py:415-437``), and evaluation by :meth:`MemRL.retrieve_in_team`:
the global memory's picks first, then the domain's (``memrl_mas.py:338-345``).

Exploration draws come from a generator seeded by (``seed``, the memory's clock, the task id),
so a resumed run draws the same.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Trajectory
from memarena.core.memory import Capabilities
from memarena.core.settings import reading
from memarena.core.typecheck import Positive, Range, Unit
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
    text_field,
)
from memarena.memory.llm_calls import clip_text
from memarena.memory.memrl import prompts
from memarena.memory.memrl.values import q_update, value_scores

log = logging.getLogger(__name__)

PURPOSES = ("script", "reflection")


@dataclass
class Experience:
    id: str
    intent: str
    goal: str
    success: bool
    note: str  # the script (solved) or the reflection (failed); "" when the LLM gave none
    trajectory: str
    q: float = 0.0
    visits: int = 0

    def render(self) -> str:
        if self.success:
            return prompts.render_success(self.goal, self.note, self.trajectory)
        return prompts.render_failure(self.goal, self.note, self.trajectory)


def temperatures(value: Any) -> dict[str, float]:
    """``method.temperature`` as {purpose: temperature}: one number for every purpose, or a
    mapping naming each of :data:`PURPOSES`."""
    if isinstance(value, Mapping):
        keys = sorted(str(k) for k in value)
        if keys != sorted(PURPOSES):
            raise ConfigError(
                f"memarena: method.temperature names {keys}; give one number, or a mapping of "
                f"exactly {list(PURPOSES)}."
            )
        out = {p: float(value[p]) for p in PURPOSES}
    else:
        out = {p: float(value) for p in PURPOSES}
    if any(t < 0 for t in out.values()):
        raise ConfigError(f"memarena: method.temperature must be >= 0; got {out}.")
    return out


@dataclass(frozen=True)
class MemRLSettings(BaselineSettings):
    """MemRL's keys (``conf/method/memrl.yaml`` gives each one's source)."""

    mode: Literal["faithful"] = "faithful"
    intent_threshold: float = 0.5
    top_intents: Positive = 5
    sim_weight: float = 0.5
    z_clip: float = 3.0
    sim_mean: float | None = 0.1856827586889267
    sim_std: float | None = 0.09407906234264374
    epsilon: Unit = 0.1
    explore_when_frozen: bool = True
    alpha: Annotated[float, Range(gt=0, le=1)] = 0.1
    success_reward: float = 1.0
    failure_reward: float = -1.0
    q_init: float = 0.0
    merge_threshold: float = 0.9
    # what evaluation reads: MemCo's released script an empty intent table; memarena the learnt one
    eval_memory: Literal["empty_as_released", "learnt"] = reading(
        "learnt", memco_released="empty_as_released", memarena="learnt"
    )
    note_chars: Positive = 800
    # each stored observation: whole, as memrl_mas.py hands MemoryService the trajectory text;
    # memarena's earlier reading: 300
    observation_chars: Positive | None = reading(None, memco_released=None, memarena=300)
    trajectory_chars: Positive = 6000
    temperature: Any = None  # a number, or {purpose: number} (script, reflection)
    seed: int = 0


class MemRL(ModalBaseline):
    """MemRL (module docstring; parameters and both readings in ``conf/method/memrl.yaml``)."""

    name = "memrl"
    schema_version = 1
    # a retrieval's exploration draw is counted (replayed on resume)
    capabilities = Capabilities(has_global=True, retrieval_mutates=True)
    MODES = ("faithful",)
    DEFAULT_TOP_K = {"faithful": 5}
    PURPOSES = PURPOSES
    COUNTS = ("writes", "intents", "merged", "q_updates", "explorations", "replaced")

    Settings = MemRLSettings

    def __init__(self, settings: MemRLSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: MemRLSettings = self.settings
        mean, std = s.sim_mean, s.sim_std
        if (mean is None) != (std is None) or (std is not None and std <= 0):
            raise ConfigError(
                "memarena: method.sim_mean and method.sim_std go together (both null: the "
                f"candidates' statistics), with sim_std > 0; got {s.sim_mean}, {s.sim_std}."
            )
        self.tau, self.top_intents = float(s.intent_threshold), s.top_intents
        self.sim_weight, self.z_clip = float(s.sim_weight), float(s.z_clip)
        self.sim_stats = None if s.sim_mean is None else (float(s.sim_mean), float(s.sim_std))
        self.epsilon, self.alpha = float(s.epsilon), float(s.alpha)
        self.explore_when_frozen = s.explore_when_frozen
        self.rewards = (float(s.success_reward), float(s.failure_reward))
        self.q_init, self.merge_threshold = float(s.q_init), float(s.merge_threshold)
        self.eval_memory = s.eval_memory
        self.note_chars, self.trajectory_chars = s.note_chars, s.trajectory_chars
        default = {"script": 0.7, "reflection": 0.3}
        self.temperatures = temperatures(default if s.temperature is None else s.temperature)
        self.seed = s.seed
        self.experiences: dict[str, Experience] = {}
        self.intents: dict[str, list[str]] = {}  # intent id -> experience ids
        self.intent_text: dict[str, str] = {}
        self.intent_index = VectorIndex()

    @property
    def reads_empty(self) -> bool:
        """True while evaluating with ``eval_memory=empty_as_released``: every retrieval
        reads an empty intent table, as in MemCo's released evaluation."""
        return self.phase == "eval" and self.eval_memory == "empty_as_released"

    def begin_phase(self, phase: str) -> None:
        super().begin_phase(phase)
        if self.reads_empty and not getattr(self, "_told_empty", False):
            self._told_empty = True
            log.warning(
                "memrl: method.eval_memory=empty_as_released: evaluation reads an empty intent "
                "table (as MemCo's released script ran MemRL); method.eval_memory=learnt "
                "evaluates the memory acquisition built (%d experiences).",
                len(self.experiences),
            )

    # -- learning ------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        if self.reads_empty:
            raise ConfigError(
                "memarena: method.eval_memory=empty_as_released reproduces MemCo's frozen "
                "evaluation and cannot learn during it; set protocol.freeze_during_eval=true, "
                "or method.eval_memory=learnt."
            )
        self.verify_embeddings()
        for group in groups:
            for trajectory, outcome in group:
                self.update_values(trajectory.memory_ids, outcome.success)
        new, self.clock = stored_tasks(groups, self.clock)
        if new:
            self._write(new)

    def update_values(self, shown: list[str], success: bool) -> None:
        """The Q update of every experience shown to a finished task (ids this memory does not
        hold, e.g. a global memory's, are left alone)."""
        reward = self.rewards[0] if success else self.rewards[1]
        for entry_id in dict.fromkeys(shown):
            experience = self.experiences.get(entry_id)
            if experience is not None:
                experience.q = q_update(experience.q, reward, self.alpha)
                experience.visits += 1
                self.counts["q_updates"] += 1

    def trajectory_text(self, task: StoredTask) -> str:
        """The trajectory as the agent saw it (first observation, then ``> action`` and
        observation lines), without the goal line, cut to ``trajectory_chars``."""
        lines = [self.observation_text(task.initial)] if task.initial else []
        for action, observation, _ in task.steps:
            lines += [f"> {clip_text(action, 200)}", self.observation_text(observation)]
        return "\n".join(lines)[: self.trajectory_chars]

    def observation_text(self, text: str) -> str:
        """One stored observation: whole (``observation_chars: null``, stripped) or cut."""
        if self.observation_chars is None:
            return str(text).strip()
        return clip_text(text, self.observation_chars)

    def _write(self, new: list[StoredTask]) -> None:
        notes = self._notes(new)
        vectors = self.services.embedder.encode([t.goal for t in new])
        for task, note, vector in zip(new, notes, vectors, strict=True):
            intent = self._intent_for(task.goal, vector)
            self.experiences[task.id] = Experience(
                id=task.id,
                intent=intent,
                goal=task.goal,
                success=task.success,
                note=note,
                trajectory=self.trajectory_text(task),
                q=self.q_init,
            )
            self.intents[intent].append(task.id)
            self.counts["writes"] += 1

    def _notes(self, tasks: list[StoredTask]) -> list[str]:
        """A script per solved task (from its trajectory alone) and a reflection per failed
        one (from its goal and trajectory): one batched call each, at the purpose's
        temperature."""
        out = [""] * len(tasks)
        for purpose, system, wanted in (
            ("script", prompts.SCRIPT_SYSTEM, True),
            ("reflection", prompts.REFLECTION_SYSTEM, False),
        ):
            chosen = [n for n, t in enumerate(tasks) if t.success == wanted]
            requests = [
                json_request(
                    system,
                    self._note_prompt(purpose, tasks[n]),
                    prompts.text_schema(purpose, self.note_chars),
                    self.token_caps[purpose],
                    self.temperatures[purpose],
                )
                for n in chosen
            ]
            for n, answer in zip(chosen, self._ask(purpose, requests), strict=True):
                out[n] = text_field(answer, purpose, self.note_chars) or ""
        return out

    def _note_prompt(self, purpose: str, task: StoredTask) -> str:
        trajectory = self.trajectory_text(task)
        if purpose == "script":
            return prompts.SCRIPT_USER.format(trajectory=trajectory)
        return prompts.REFLECTION_USER.format(goal=task.goal, trajectory=trajectory)

    def _intent_for(self, goal: str, vector: np.ndarray) -> str:
        """The intent a new experience joins: the most similar one with cosine >=
        ``merge_threshold``, else a new intent opened by this task."""
        best = self.intent_index.search(vector, 1)
        if best and best[0][1] >= self.merge_threshold:
            self.counts["merged"] += 1
            return best[0][0]
        return self._open_intent(goal, vector)

    def _open_intent(self, goal: str, vector: np.ndarray) -> str:
        intent = f"intent-{len(self.intents) + 1}"
        self.intents[intent] = []
        self.intent_text[intent] = goal
        self.intent_index.add(intent, vector)
        self.counts["intents"] += 1
        return intent

    # -- MemCo's multi-domain protocol -----------------------------------------------------------
    def merge_domains(self, memories: dict[str, MemoryMethod]) -> None:
        """Fill this fresh memory as MemCo's global MemRL memory from every domain's memory, in
        order: each domain's tasks in the order they were written become one intent each
        (keyed by the task's text; no merging by similarity, since the global memory is fed
        with no retrieval behind it), with the domain's script or reflection and trajectory,
        Q = ``q_init`` and no visit: no value is carried over or updated
        (``memrl_mas.py:415-437`` -> ``add_memories`` with no retrieved queries). A later task
        with the same text replaces the earlier one, as the reference's intent table does
        (``memory_service.py:1641-1642``). The note is reused, not asked again: the reference's
        global service asks its LLM again, with the same prompt and temperature.
        """
        entries: list[tuple[str, Experience]] = []
        for domain, memory in memories.items():
            if not isinstance(memory, MemRL):
                raise ConfigError(
                    f"memarena: memrl can merge only memrl domain memories; {domain!r} is "
                    f"{type(memory).__name__}."
                )
            entries += [(domain, e) for e in memory.experiences.values()]
        if not entries:
            return
        goals = list(dict.fromkeys(e.goal for _, e in entries))
        vectors = dict(zip(goals, self.services.embedder.encode(goals), strict=True))
        by_text = {text: intent for intent, text in self.intent_text.items()}
        for domain, local in entries:
            entry_id = f"{domain}/{local.id}"
            intent = by_text.get(local.goal)
            if intent is None:
                intent = by_text[local.goal] = self._open_intent(local.goal, vectors[local.goal])
            else:
                for old in self.intents[intent]:
                    self.experiences.pop(old, None)
                self.counts["replaced"] += 1
            self.intents[intent] = [entry_id]
            self.experiences[entry_id] = Experience(
                id=entry_id,
                intent=intent,
                goal=local.goal,
                success=local.success,
                note=local.note,
                trajectory=local.trajectory,
                q=self.q_init,
            )
            self.counts["writes"] += 1
            self.clock += 1

    def retrieve_in_team(
        self, query: MemoryQuery, global_memory: MemoryMethod | None
    ) -> MemoryContext:
        """This domain memory's context with the global memory's: each picks its own
        experiences (its own scores and exploration draw), the global picks come first in
        both the solved and the failed part (``memrl_mas.py:338-345``)."""
        if global_memory is None:
            return self.retrieve(query)
        if not isinstance(global_memory, MemRL):
            raise ConfigError(
                "memarena: memrl's global memory must be memrl; got "
                f"{type(global_memory).__name__}."
            )
        if self.reads_empty:
            return MemoryContext.empty()
        self.verify_embeddings()
        global_memory.verify_embeddings()
        if not (self.experiences or global_memory.experiences) or self.top_k == 0:
            return MemoryContext.empty()
        vector = self.encode_queries([query.task.goal])[0]
        return self._compose(global_memory.pick(query, vector) + self.pick(query, vector))

    def replay_retrieval_in_team(
        self, trajectory: Trajectory, spent: Any, global_memory: MemoryMethod | None
    ) -> None:
        """Both draws :meth:`retrieve_in_team` made, again: the global memory's (no cost of its
        own: the retrieval's is this memory's) and this one's."""
        if isinstance(global_memory, MemRL) and not self.reads_empty and self.top_k:
            global_memory.replay_retrieval(trajectory, None)
        self.replay_retrieval(trajectory, spent)

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        return [(self.intent_index, lambda ids: [self.intent_text[i] for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        if self.reads_empty or not queries or not self.experiences or self.top_k == 0:
            return [MemoryContext.empty() for _ in queries]
        self.verify_embeddings()
        vectors = self.encode_queries([q.task.goal for q in queries])
        return [self._compose(self.pick(q, v)) for q, v in zip(queries, vectors, strict=True)]

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """A recorded retrieval, again (on resume): its exploration draw is made again (the
        draw's generator is the task's and the clock's, the candidates this memory's as the
        live retrieval saw it) and counted when it explored."""
        super().replay_retrieval(trajectory, spent)
        if self.reads_empty or not self.experiences or self.top_k == 0 or self.epsilon <= 0:
            return
        rng = self._rng(trajectory.task.id)
        if rng is None:
            return
        self.verify_embeddings()
        vector = self.encode_queries([trajectory.task.goal])[0]
        if self.candidates(vector) and rng.random() < self.epsilon:
            self.counts["explorations"] += 1

    def candidates(self, vector: np.ndarray) -> list[tuple[str, float]]:
        """(experience id, its intent's cosine) of the intents kept for a task."""
        sims = self.intent_index.similarity(vector)
        kept = sorted((i for i in sims if sims[i] >= self.tau), key=lambda i: -sims[i])
        return [(e, sims[i]) for i in kept[: self.top_intents] for e in self.intents[i]]

    def select(self, vector: np.ndarray, rng: np.random.Generator | None = None) -> list[str]:
        """The experiences to show: the ``top_k`` by value-aware score, or (``rng`` given,
        with probability epsilon) a random sample of ``top_k`` candidates."""
        pool = self.candidates(vector)
        if not pool:
            return []
        ids = [e for e, _ in pool]
        if rng is not None and self.epsilon > 0 and rng.random() < self.epsilon:
            self.counts["explorations"] += 1
            picked = rng.choice(len(ids), size=min(self.top_k, len(ids)), replace=False)
            return [ids[int(n)] for n in picked]
        scores = value_scores(
            [s for _, s in pool],
            [self.experiences[e].q for e in ids],
            self.sim_weight,
            self.z_clip,
            self.sim_stats,
        )
        order = sorted(range(len(ids)), key=lambda n: -scores[n])  # ties: candidate order
        return [ids[n] for n in order[: self.top_k]]

    def pick(self, query: MemoryQuery, vector: np.ndarray) -> list[Experience]:
        """The experiences this memory shows for ``query`` (its goal embedded as ``vector``)."""
        if not self.experiences or self.top_k == 0:
            return []
        return [self.experiences[e] for e in self.select(vector, self._rng(query.task.id))]

    def _rng(self, task_id: str) -> np.random.Generator | None:
        """The exploration draw's generator; None (greedy) when frozen, unless
        ``explore_when_frozen``."""
        if self.frozen and not self.explore_when_frozen:
            return None
        digest = hashlib.sha256(task_id.encode()).digest()
        return np.random.default_rng([self.seed, self.clock, int.from_bytes(digest[:4], "little")])

    @staticmethod
    def _compose(shown: list[Experience]) -> MemoryContext:
        """Solved experiences as examples, then the failed ones after the warning line, each
        part in the order given."""
        if not shown:
            return MemoryContext.empty()
        slots: dict[str, str] = {}
        for name, header, wanted in (
            ("memrl_successes", prompts.SUCCESS_HEADER, True),
            ("memrl_failures", prompts.FAILURE_HEADER, False),
        ):
            part = [e.render() for e in shown if e.success == wanted]
            if part:
                slots[name] = "\n\n".join([header, *part])
        return MemoryContext(slots=slots, memory_ids=[e.id for e in shown])

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        qs = [e.q for e in self.experiences.values()]
        return {
            "memory_entries": len(self.experiences),
            "memory_intents": len(self.intents),
            "memory_writes": self.counts["writes"],
            "memory_q_updates": self.counts["q_updates"],
            "memory_mean_q": float(np.mean(qs)) if qs else 0.0,
            "memory_explorations": self.counts["explorations"],
            "memory_eval_reads_empty": self.eval_memory == "empty_as_released",
        }

    def size(self) -> int:
        return len(self.experiences)

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "experiences": [asdict(e) for e in self.experiences.values()],
            "intents": {i: list(ids) for i, ids in self.intents.items()},
            "intent_text": dict(self.intent_text),
            "intent_index": self.intent_index.to_dict(self.services.embedder_if_built),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.experiences = {e["id"]: Experience(**e) for e in state["experiences"]}
        self.intents = {i: list(ids) for i, ids in state["intents"].items()}
        self.intent_text = dict(state["intent_text"])
        self.intent_index = VectorIndex.from_dict(state["intent_index"])
