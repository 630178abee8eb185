"""``MemRL`` (Zhang et al., 2026; MemCo's baseline) as ``method=memrl``: episodic memory with
learnt utilities.

Memory: intents (the text of a task that opened them, embedded) each holding experiences. An
experience is a finished task: a solved one with a memory-LLM *script* (3-5 high-level steps)
and its trajectory, a failed one with a memory-LLM *reflection* and the failed trajectory; it
carries a value Q (``q_init``) and a visit count.

Retrieval, once per task (:mod:`.values`):

1. cosine between the task and every intent; intents with cosine >= ``intent_threshold`` (tau,
   0.5) are kept, the best ``top_intents`` (5);
2. their experiences are the candidates, each with its intent's cosine;
3. ``score = 0.5 z(sim) + 0.5 z(Q)``, z over the candidates clipped to +-3 (MemRL's code
   normalises the similarity with fixed corpus statistics instead when ``sim_mean`` /
   ``sim_std`` are set: ALFWorld 0.5187 / 0.1203);
4. the ``top_k`` (5; MemRL's ALFWorld config uses 3) best; while the memory learns, with
   probability ``epsilon`` (0.1) a random sample of ``top_k`` candidates instead (exploration;
   never when frozen).

Learning, after each task (``observe``): every experience shown to the task gets
``Q <- (1 - alpha) Q + alpha r`` with r = ``success_reward`` (+1) or ``failure_reward`` (-1) and
one more visit; the task itself is written as a new experience under the intent whose cosine to
it is at least ``merge_threshold`` (0.9; the best such), or under a new intent. Script and
reflection requests are batched per observed wave and JSON-constrained; an unusable answer is
a counted fallback and the experience keeps its trajectory alone.

Exploration draws come from a generator seeded by (``seed``, the memory's clock, the task id),
so a resumed run draws the same.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryQuery
from memarena.memory.episodic import (
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
    text_field,
)
from memarena.memory.memrl import prompts
from memarena.memory.memrl.values import q_update, value_scores


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
        label = "Script" if self.success else "What went wrong"
        lines = [f"Task: {self.goal}"]
        if self.note:
            lines.append(f"{label}: {self.note}")
        lines.append(("Trajectory:\n" if self.success else "Failed approach:\n") + self.trajectory)
        return "\n".join(lines)


class MemRL(ModalBaseline):
    """MemRL (parameters in ``conf/method/memrl.yaml``)."""

    name = "memrl"
    schema_version = 1
    MODES = ("faithful",)
    DEFAULT_TOP_K = {"faithful": 5}
    PURPOSES = ("script", "reflection")
    COUNTS = ("writes", "intents", "merged", "q_updates", "explorations")

    def __init__(
        self,
        top_k: int | None = None,
        intent_threshold: float = 0.5,
        top_intents: int = 5,
        sim_weight: float = 0.5,
        z_clip: float = 3.0,
        sim_mean: float | None = None,
        sim_std: float | None = None,
        epsilon: float = 0.1,
        alpha: float = 0.1,
        success_reward: float = 1.0,
        failure_reward: float = -1.0,
        q_init: float = 0.0,
        merge_threshold: float = 0.9,
        note_chars: int = 800,
        observation_chars: int = 300,
        trajectory_chars: int = 6000,
        max_tokens: Any = None,
        temperature: float = 0.0,
        observe_batch: int = 16,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(top_k=top_k, observe_batch=observe_batch, **kwargs)
        if not 0.0 <= epsilon <= 1.0 or not 0.0 < alpha <= 1.0 or top_intents < 1:
            raise ConfigError(
                "memarena: method=memrl needs epsilon in [0, 1], alpha in (0, 1] and "
                f"top_intents >= 1; got epsilon={epsilon}, alpha={alpha}, "
                f"top_intents={top_intents}."
            )
        if (sim_mean is None) != (sim_std is None) or (sim_std is not None and sim_std <= 0):
            raise ConfigError(
                "memarena: method.sim_mean and method.sim_std go together (both null: the "
                f"candidates' statistics), with sim_std > 0; got {sim_mean}, {sim_std}."
            )
        self.tau, self.top_intents = float(intent_threshold), int(top_intents)
        self.sim_weight, self.z_clip = float(sim_weight), float(z_clip)
        self.sim_stats = None if sim_mean is None else (float(sim_mean), float(sim_std))
        self.epsilon, self.alpha = float(epsilon), float(alpha)
        self.rewards = (float(success_reward), float(failure_reward))
        self.q_init, self.merge_threshold = float(q_init), float(merge_threshold)
        self.note_chars, self.observation_chars = int(note_chars), int(observation_chars)
        self.trajectory_chars = int(trajectory_chars)
        self.set_token_caps(max_tokens)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.experiences: dict[str, Experience] = {}
        self.intents: dict[str, list[str]] = {}  # intent id -> experience ids
        self.intent_text: dict[str, str] = {}
        self.intent_index = VectorIndex()

    # -- learning ------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        for group in groups:
            for trajectory, outcome in group:
                self.update_values(trajectory.memory_ids, outcome.success)
        new, self.clock = stored_tasks(groups, self.clock)
        if new:
            self._write(new)

    def update_values(self, shown: list[str], success: bool) -> None:
        """The Q update of every experience shown to a finished task."""
        reward = self.rewards[0] if success else self.rewards[1]
        for entry_id in dict.fromkeys(shown):
            experience = self.experiences.get(entry_id)
            if experience is not None:
                experience.q = q_update(experience.q, reward, self.alpha)
                experience.visits += 1
                self.counts["q_updates"] += 1

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
                trajectory=task.render(self.observation_chars)[: self.trajectory_chars],
                q=self.q_init,
            )
            self.intents[intent].append(task.id)
            self.counts["writes"] += 1

    def _notes(self, tasks: list[StoredTask]) -> list[str]:
        """A script per solved task and a reflection per failed one: one batched call each."""
        out = [""] * len(tasks)
        for purpose, key, system, user, wanted in (
            ("script", "script", prompts.SCRIPT_SYSTEM, prompts.SCRIPT_USER, True),
            ("reflection", "reflection", prompts.REFLECTION_SYSTEM, prompts.REFLECTION_USER, False),
        ):
            chosen = [n for n, t in enumerate(tasks) if t.success == wanted]
            requests = [
                json_request(
                    system,
                    user.format(
                        trajectory=tasks[n].render(self.observation_chars)[: self.trajectory_chars]
                    ),
                    prompts.text_schema(key, self.note_chars),
                    self.token_caps[purpose],
                    self.temperature,
                )
                for n in chosen
            ]
            for n, answer in zip(chosen, self._ask(purpose, requests), strict=True):
                out[n] = text_field(answer, key, self.note_chars) or ""
        return out

    def _intent_for(self, goal: str, vector: np.ndarray) -> str:
        """The intent a new experience joins: the most similar one with cosine >=
        ``merge_threshold``, else a new intent opened by this task."""
        best = self.intent_index.search(vector, 1)
        if best and best[0][1] >= self.merge_threshold:
            self.counts["merged"] += 1
            return best[0][0]
        intent = f"intent-{len(self.intents) + 1}"
        self.intents[intent] = []
        self.intent_text[intent] = goal
        self.intent_index.add(intent, vector)
        self.counts["intents"] += 1
        return intent

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        return [(self.intent_index, lambda ids: [self.intent_text[i] for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        if not queries or not self.experiences or self.top_k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        return [self._context(q, v) for q, v in zip(queries, vectors, strict=True)]

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

    def _context(self, query: MemoryQuery, vector: np.ndarray) -> MemoryContext:
        rng = None if self.frozen else np.random.default_rng(self._draw_seed(query.task.id))
        chosen = self.select(vector, rng)
        if not chosen:
            return MemoryContext.empty()
        slots: dict[str, str] = {}
        for name, header, wanted in (
            ("memrl_successes", prompts.SUCCESS_HEADER, True),
            ("memrl_failures", prompts.FAILURE_HEADER, False),
        ):
            shown = [self.experiences[e] for e in chosen if self.experiences[e].success == wanted]
            if shown:
                slots[name] = "\n\n".join([header, *(e.render() for e in shown)])
        return MemoryContext(slots=slots, memory_ids=chosen)

    def _draw_seed(self, task_id: str) -> list[int]:
        digest = hashlib.sha256(task_id.encode()).digest()
        return [self.seed, self.clock, int.from_bytes(digest[:4], "little")]

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        qs = [e.q for e in self.experiences.values()]
        return {
            "memory_entries": len(self.experiences),
            "memory_intents": len(self.intents),
            "memory_writes": self.counts["writes"],
            "memory_q_updates": self.counts["q_updates"],
            "memory_mean_q": float(np.mean(qs)) if qs else 0.0,
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
