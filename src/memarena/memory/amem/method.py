"""``AMem`` (A-Mem, Xu et al., 2025; MemCo's and ReMe's baseline) as ``method=amem``.

``mode: full`` -- A-Mem's agentic memory (facts from its code, WujiangXu/AgenticMemory; the
PyPI package ``agentic-memory`` is a different project):

- writing a finished task: a note whose content is the task and its trajectory; the memory LLM
  analyses it into keywords, context and tags (one batched call per observed wave);
- evolution: the new note's ``evolution_k`` (5) nearest notes and the note go to the memory LLM,
  whose decision is applied by :func:`~memarena.memory.amem.notes.apply_evolution` (links on
  the new note, replaced tags / contexts of neighbours). One batched call per wave: each new
  note's neighbours are found among the notes stored before it (earlier notes of the same wave
  included, before their own evolution); decisions are applied in order;
- A-Mem re-embeds notes only when consolidating, every ``consolidate_every`` (100) evolutions:
  until then a neighbour's changed context and tags do not reach the index (as its code);
- retrieval, once per task: the ``top_k`` notes nearest to the task (embedding of content,
  context, keywords and tags), then up to ``linked_k`` notes linked from each hit (not already
  shown), each rendered with its context, keywords and tags. A-Mem's code lets an LLM turn
  the question into keywords first (LoCoMo); memarena queries with the task text.
  ``retrieval_count`` counts how often a note was shown while the memory learns (A-Mem keeps
  the field but never increments it).

``mode: lite`` -- the weakened variant MemCo's table ran (no LLM on the memory side): notes are
stored and retrieved by the embedding of their content alone; no analysis, no evolution, no
links. MemCo does not describe it further; this is memarena's reading.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memarena.core import ChatRequest, ConfigError, MemoryContext, MemoryQuery
from memarena.memory.amem import prompts
from memarena.memory.amem.notes import Note, apply_evolution
from memarena.memory.episodic import ModalBaseline, Pair, VectorIndex, json_request, stored_tasks
from memarena.memory.llm_calls import clip_text


class AMem(ModalBaseline):
    """A-Mem (parameters in ``conf/method/amem.yaml``)."""

    name = "amem"
    schema_version = 1
    MODES = ("full", "lite")
    DEFAULT_TOP_K = {"full": 3, "lite": 3}
    PURPOSES = ("analysis", "evolution")
    COUNTS = ("writes", "evolutions", "links", "neighbour_updates", "consolidations")

    def __init__(
        self,
        mode: str = "full",
        top_k: int | None = None,
        linked_k: int | None = None,
        evolution_k: int = 5,
        consolidate_every: int = 100,
        observation_chars: int = 300,
        content_chars: int = 4000,
        max_tokens: Any = None,
        temperature: float = 0.7,
        observe_batch: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(mode=mode, top_k=top_k, observe_batch=observe_batch, **kwargs)
        if evolution_k < 1 or consolidate_every < 1:
            raise ConfigError(
                "memarena: method=amem needs evolution_k >= 1 and consolidate_every >= 1; got "
                f"{evolution_k}, {consolidate_every}."
            )
        self.linked_k = self.top_k if linked_k is None else int(linked_k)
        self.evolution_k, self.consolidate_every = int(evolution_k), int(consolidate_every)
        self.observation_chars, self.content_chars = int(observation_chars), int(content_chars)
        self.set_token_caps(max_tokens)
        self.temperature = float(temperature)
        self.notes: dict[str, Note] = {}
        self.index = VectorIndex()

    def _request(self, purpose: str, system: str, user: str, schema: dict[str, Any]) -> ChatRequest:
        return json_request(system, user, schema, self.token_caps[purpose], self.temperature)

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        tasks, self.clock = stored_tasks(groups, self.clock)
        notes = [
            Note(
                id=t.id,
                content=t.render(self.observation_chars)[: self.content_chars],
                timestamp=t.time,
                goal=t.goal,
            )
            for t in tasks
        ]
        if not notes:
            return
        if self.mode == "full":
            self._analyse(notes)
        vectors = self.services.embedder.encode([self._key(n) for n in notes])
        neighbourhoods: list[list[Note]] = []
        for note, vector in zip(notes, vectors, strict=True):
            near = self.index.search(vector, self.evolution_k) if self.mode == "full" else []
            neighbourhoods.append([self.notes[i] for i, _ in near])
            self.notes[note.id] = note
            self.index.add(note.id, vector)
            self.counts["writes"] += 1
        if self.mode == "full":
            self._evolve(notes, neighbourhoods)

    def _key(self, note: Note) -> str:
        return note.embedding_text() if self.mode == "full" else note.content

    def _analyse(self, notes: list[Note]) -> None:
        requests = [
            self._request(
                "analysis",
                prompts.ANALYSIS_SYSTEM,
                prompts.ANALYSIS_USER.format(content=n.content),
                prompts.ANALYSIS_SCHEMA,
            )
            for n in notes
        ]
        for note, answer in zip(notes, self._ask("analysis", requests), strict=True):
            if not isinstance(answer, dict):
                continue  # counted by the batch; the note keeps A-Mem's defaults
            keywords, tags = answer.get("keywords"), answer.get("tags")
            if isinstance(keywords, list):
                note.keywords = [clip_text(k, 40) for k in keywords if isinstance(k, str)]
            if isinstance(tags, list):
                note.tags = [clip_text(t, 40) for t in tags if isinstance(t, str)]
            if isinstance(answer.get("context"), str) and answer["context"].strip():
                note.context = clip_text(answer["context"], 300)

    def _evolve(self, notes: list[Note], neighbourhoods: list[list[Note]]) -> None:
        jobs = [(n, near) for n, near in zip(notes, neighbourhoods, strict=True) if near]
        requests = [
            self._request(
                "evolution",
                prompts.EVOLUTION_SYSTEM,
                prompts.EVOLUTION_USER.format(
                    context=note.context,
                    keywords=", ".join(note.keywords),
                    content=clip_text(note.content, 1500),
                    n=len(near),
                    neighbours="\n".join(
                        f"{k}. context: {m.context}; keywords: {', '.join(m.keywords)}; "
                        f"tags: {', '.join(m.tags)}; {clip_text(m.content, 400)}"
                        for k, m in enumerate(near, 1)
                    ),
                ),
                prompts.evolution_schema(len(near)),
            )
            for note, near in jobs
        ]
        for (note, near), answer in zip(jobs, self._ask("evolution", requests), strict=True):
            done = apply_evolution(note, near, answer, self.clock)
            if isinstance(answer, dict) and answer.get("should_evolve") is True:
                self.counts["evolutions"] += 1
                if self.counts["evolutions"] % self.consolidate_every == 0:
                    self.consolidate()
            self.counts["links"] += done["links"]
            self.counts["neighbour_updates"] += done["neighbours"]

    def consolidate(self) -> None:
        """Re-embed every note from its current content, context, keywords and tags."""
        ids = list(self.notes)
        vectors = self.services.embedder.encode([self._key(self.notes[i]) for i in ids])
        self.index = VectorIndex()
        for note_id, vector in zip(ids, vectors, strict=True):
            self.index.add(note_id, vector)
        self.counts["consolidations"] += 1

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        return [(self.index, lambda ids: [self._key(self.notes[i]) for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        if not queries or not self.notes or self.top_k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        return [self._context(v) for v in vectors]

    def select(self, vector: np.ndarray) -> list[str]:
        """The top-k notes, then up to ``linked_k`` linked notes of each hit (not shown yet)."""
        hits = [i for i, _ in self.index.search(vector, self.top_k)]
        chosen = list(hits)
        for hit in hits:
            linked = [i for i in self.notes[hit].links if i in self.notes and i not in chosen]
            chosen += linked[: self.linked_k]
        return chosen

    def _context(self, vector: np.ndarray) -> MemoryContext:
        chosen = self.select(vector)
        if not chosen:
            return MemoryContext.empty()
        if not self.frozen:
            for note_id in chosen:
                self.notes[note_id].retrieval_count += 1
        body = "\n\n".join(self.notes[i].render() for i in chosen)
        return MemoryContext(
            slots={"amem_notes": f"{prompts.MEMORY_HEADER}\n{body}"}, memory_ids=chosen
        )

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": len(self.notes),
            "memory_writes": self.counts["writes"],
            "memory_links": sum(len(n.links) for n in self.notes.values()),
            "memory_evolutions": self.counts["evolutions"],
            "memory_neighbour_updates": self.counts["neighbour_updates"],
        }

    def size(self) -> int:
        return len(self.notes)

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "notes": [n.to_dict() for n in self.notes.values()],
            "index": self.index.to_dict(self.services.embedder_if_built),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.notes = {d["id"]: Note(**d) for d in state["notes"]}
        self.index = VectorIndex.from_dict(state["index"])
