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

``mode: lite`` -- no LLM on the memory side: no analysis, no evolution, no links. Alone
(``method=amem method.mode=lite``) it is memarena's earlier reading: notes keep A-Mem's default
fields and are stored and retrieved by the embedding of their content, ``top_k`` (3) shown.

``method=amem_lite`` -- A-Mem as MemCo's code ran it for its tables (SYannL/nvdamas
``mas/memory/mas_memory/amem.py``; see :mod:`.memco_layout`): lite mode with the keys below at
MemCo's values. Each key's A-Mem reading is its ``conf/method/amem.yaml`` default:

- ``note_terms``: ``tokens`` -- a note's context is its task description, its 8 keywords and 4
  tags come from a token heuristic (:func:`~.memco_layout.token_terms`); ``default`` -- A-Mem's
  defaults (context "General", no keywords or tags) until the memory LLM analyses the note
  (full mode; its answer replaces the heuristic's terms too, an unusable one keeps them);
- ``index_text``: ``memco`` -- a note is embedded from content, context, keywords and tags
  (:meth:`~.notes.Note.index_text`); ``amem`` -- the same fields labelled, as A-Mem's
  ``add_note``; ``content`` -- content alone; null -- full: amem, lite: content;
- ``top_k`` / ``hint_k`` / ``insight_k``: MemCo ranks ``top_k + hint_k`` = 2 notes
  (successful_topk 1 + failed_topk 1, its harness's values), shows the top ``top_k`` = 1 as a
  worked example, the top ``insight_k`` = 1 again as a ``[Context] / [Keywords] / [Tags]``
  insight line, and the note ranked second only as one line saying similar tasks failed
  (A-Mem keeps no failure label there: that note is passed on as a failed case whatever its
  outcome). A-Mem's reading: ``top_k`` notes (null: 3), no insight line, no such line;
- ``layout``: ``memco`` -- a note's content is MemCo's execution pattern and the prompt uses
  the section headers of MemCo's harness (:mod:`.prompts`); ``amem`` -- memarena's note text
  and a "Related memories:" block;
- ``observation_chars`` / ``content_chars``: null (MemCo clips neither observations nor
  contents); A-Mem's reading clips observations to 300 characters and contents to 4000.

``method=amem_reme`` -- A-Mem as ReMe ran it for its tables (reme.txt Section 4.1 and Appendix
B; ReMe's released code ships no baseline runs): full mode with the two keys below on. Each
key's A-Mem (and MemCo) reading is its ``conf/method/amem.yaml`` default:

- ``success_only``: true -- only solved tasks become notes (Section 4.1: the baselines' "memory
  addition operation ... is triggered only upon the collection of successful trajectories"); a
  failed task still advances the memory's clock and is counted (``skipped``). false -- every
  finished task is written (A-Mem's code stores whatever it is given; MemCo's harness too);
- ``note_content``: ``extracted`` -- before a task becomes a note, one batched memory-LLM call
  (purpose ``extraction``, :data:`~.prompts.EXTRACTION_SYSTEM`, a JSON answer bounded by
  :data:`~.prompts.EXTRACTION_SCHEMA`) extracts its procedural memory from the note text the
  ``layout`` renders, and that text is the note's content, which the analysis and the evolution
  then read (Appendix B: A-Mem "with slight prompt modifications to extract procedural
  memories"; memarena's wording). An unusable answer keeps the rendered trajectory (a counted
  fallback, ``amem_extraction``). In lite mode it is the memory's only LLM call.
  ``trajectory`` -- the note's content is the rendered trajectory itself.

MemCo's A-Mem has no global retriever (``amem.py`` defines no ``set_global_retriever``, so the
global memory its harness builds is never read): under MemCo's per-domain protocol each domain
agent retrieves from its own domain's notes only (``has_global = False``). Its harness retrieves
once per task with the task as the query, and its memory is frozen while evaluating.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memarena.core import ChatRequest, ConfigError, MemoryContext, MemoryQuery, Trajectory
from memarena.core.memory import Capabilities
from memarena.core.settings import reading
from memarena.core.typecheck import Count, Positive
from memarena.memory.amem import memco_layout, prompts
from memarena.memory.amem.notes import Note, apply_evolution
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
)
from memarena.memory.llm_calls import clip_text, record_fallback

# what a snapshot's notes and index rows were written under (checked when it is loaded); a
# snapshot from before these keys was written under their A-Mem readings
WRITING_KEYS = (
    "layout",
    "note_terms",
    "index_text",
    "observation_chars",
    "content_chars",
    "success_only",
    "note_content",
)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "null" if value is None else str(value)


@dataclass(frozen=True)
class AMemSettings(BaselineSettings):
    """A-Mem's keys (``conf/method/amem.yaml``; MemCo's no-LLM reading: ``amem_lite.yaml``)."""

    mode: Literal["full", "lite"] = "full"
    linked_k: Count | None = None  # null: top_k
    hint_k: Count = 0
    insight_k: Count = 0
    note_terms: Literal["default", "tokens"] = reading(
        "default", released="default", memco_released="tokens"
    )
    index_text: Literal["amem", "memco", "content"] | None = None  # null: the mode's
    layout: Literal["amem", "memco"] = reading("amem", memarena="amem", memco_released="memco")
    evolution_k: Positive = 5
    consolidate_every: Positive = 100
    observation_chars: Positive | None = reading(300, memarena=300, memco_released=None)
    content_chars: Positive | None = reading(4000, memarena=4000, memco_released=None)
    success_only: bool = False
    note_content: Literal["trajectory", "extracted"] = "trajectory"


class AMem(ModalBaseline):
    """A-Mem (parameters in ``conf/method/amem.yaml``; MemCo's reading in ``amem_lite.yaml``,
    both readings of every key in the module docstring)."""

    name = "amem"
    schema_version = 1
    # MemCo's A-Mem has no global retriever (its amem.py defines no set_global_retriever, so
    # the harness never reads the global memory it builds): each domain agent sees its own notes
    # a retrieval while learning counts what it showed (replayed on resume)
    capabilities = Capabilities(has_global=False, retrieval_mutates=True)
    MODES = ("full", "lite")
    DEFAULT_TOP_K = {"full": 3, "lite": 3}
    DEFAULT_INDEX_TEXT = {"full": "amem", "lite": "content"}
    PURPOSES = ("analysis", "evolution", "extraction")
    TEMPERATURE = 0.7  # A-Mem's analysis temperature
    # skipped: failed tasks not written (success_only)
    COUNTS = ("writes", "evolutions", "links", "neighbour_updates", "consolidations", "skipped")

    Settings = AMemSettings

    def __init__(self, settings: AMemSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: AMemSettings = self.settings
        self.linked_k = self.top_k if s.linked_k is None else s.linked_k
        self.hint_k, self.insight_k = s.hint_k, s.insight_k
        self.note_terms = s.note_terms
        default_index = self.DEFAULT_INDEX_TEXT[self.mode]
        self.index_text = default_index if s.index_text is None else s.index_text
        self.layout = s.layout
        self.evolution_k, self.consolidate_every = s.evolution_k, s.consolidate_every
        self.observation_chars = s.observation_chars
        self.content_chars = s.content_chars
        self.success_only = s.success_only
        self.note_content = s.note_content
        self.notes: dict[str, Note] = {}
        self.index = VectorIndex()

    def _request(self, purpose: str, system: str, user: str, schema: dict[str, Any]) -> ChatRequest:
        return json_request(system, user, schema, self.token_caps[purpose], self.temperature)

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        tasks, self.clock = stored_tasks(groups, self.clock)
        if self.success_only:  # the clock still counts the failed tasks
            self.counts["skipped"] += sum(1 for t in tasks if not t.success)
            tasks = [t for t in tasks if t.success]
        notes = [self.write_note(t) for t in tasks]
        if not notes:
            return
        if self.note_content == "extracted":
            self._extract(notes)
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

    def write_note(self, task: StoredTask) -> Note:
        """A finished task as a note, before any analysis: its content in the ``layout``, and
        with ``note_terms: tokens`` its task description as context and the heuristic's terms."""
        if self.layout == "memco":
            content = memco_layout.note_content(task, self.observation_chars)
        elif self.observation_chars is None:  # memarena's text, observations whole
            lines = [f"Task: {task.goal} ({task.status})", task.initial.strip()]
            content = "\n".join(x for x in [*lines, memco_layout.trajectory(task)] if x)
        else:
            content = task.render(self.observation_chars)
        if self.content_chars is not None:
            content = content[: self.content_chars]
        note = Note(id=task.id, content=content, timestamp=task.time, goal=task.goal)
        if self.note_terms == "tokens":
            note.context = memco_layout.task_description(task, self.observation_chars)
            note.keywords, note.tags = memco_layout.token_terms(content)
        return note

    def _key(self, note: Note) -> str:
        return note.index_text(self.index_text)

    def _extract(self, notes: list[Note]) -> None:
        """``note_content: extracted``: each note's content (the rendered trajectory) replaced by
        the procedural memory the memory LLM extracts from it (one batched call). An answer
        without a usable memory keeps the trajectory, counted as ``amem_extraction``."""
        answers = self._ask_per_note(
            "extraction", prompts.EXTRACTION_SYSTEM, prompts.EXTRACTION_USER, "trajectory",
            prompts.EXTRACTION_SCHEMA, notes,
        )  # fmt: skip
        for note, answer in zip(notes, answers, strict=True):
            memory = answer.get("memory") if isinstance(answer, dict) else None
            if isinstance(memory, str) and memory.strip():
                note.content = memory.strip()[: self.content_chars]
                if self.note_terms == "tokens":  # the heuristic's terms of the new content
                    note.keywords, note.tags = memco_layout.token_terms(note.content)
            elif answer is not None:  # parsed, but no memory (an unparsed one is counted)
                record_fallback(self.services.llm, "amem_extraction", self.fallbacks)

    def _ask_per_note(
        self, purpose: str, system: str, user: str, field: str, schema: dict, notes: list[Note]
    ) -> list:
        """One request per note (its content as ``field`` of the ``user`` template), in one
        batched call; the parsed answers in note order."""
        requests = [
            self._request(purpose, system, user.format(**{field: n.content}), schema)
            for n in notes
        ]
        return self._ask(purpose, requests)

    def _analyse(self, notes: list[Note]) -> None:
        answers = self._ask_per_note(
            "analysis", prompts.ANALYSIS_SYSTEM, prompts.ANALYSIS_USER, "content",
            prompts.ANALYSIS_SCHEMA, notes,
        )  # fmt: skip
        for note, answer in zip(notes, answers, strict=True):
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
        if not queries or not self.notes or self.top_k + self.hint_k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        return [self._context(v) for v in vectors]

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """Learning: the retrieval count of each note the episode was shown, again."""
        super().replay_retrieval(trajectory, spent)
        if not self.frozen:
            for note_id in trajectory.memory_ids:
                if note_id in self.notes:
                    self.notes[note_id].retrieval_count += 1

    def rank(self, vector: np.ndarray) -> list[str]:
        """The ``top_k + hint_k`` notes nearest to the query, nearest first."""
        return [i for i, _ in self.index.search(vector, self.top_k + self.hint_k)]

    def select(self, vector: np.ndarray) -> list[str]:
        """The notes shown whole: the top-k, then up to ``linked_k`` linked notes of each hit
        (not shown yet)."""
        return self._examples(self.rank(vector))

    def _examples(self, ranked: list[str]) -> list[str]:
        hits = ranked[: self.top_k]
        chosen = list(hits)
        for hit in hits:
            linked = [i for i in self.notes[hit].links if i in self.notes and i not in chosen]
            chosen += linked[: self.linked_k]
        return chosen

    def _context(self, vector: np.ndarray) -> MemoryContext:
        ranked = self.rank(vector)
        examples = self._examples(ranked)
        hinted = ranked[self.top_k :] if self.hint_k else []
        insights = [self._insight(self.notes[i]) for i in ranked[: self.insight_k]]
        lines = [line for line in insights if line] + ([prompts.FAILED_HINT] if hinted else [])
        shown = list(dict.fromkeys(examples + ranked[: self.insight_k] + hinted))
        if not shown:
            return MemoryContext.empty()
        if not self.frozen:
            for note_id in shown:
                self.notes[note_id].retrieval_count += 1
        slots: dict[str, str] = {}
        if examples:
            slots["amem_notes"] = self._render_examples([self.notes[i] for i in examples])
        if lines:
            slots["amem_insights"] = self._render_insights(lines)
        return MemoryContext(slots=slots, memory_ids=shown)

    @staticmethod
    def _insight(note: Note) -> str:
        return memco_layout.insight_line(note.context, note.keywords, note.tags)

    def _render_insights(self, lines: list[str]) -> str:
        if self.layout == "memco":
            return memco_layout.render_insights(lines)
        numbered = "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))
        return f"{prompts.AMEM_INSIGHTS_HEADER}\n{numbered}"

    def _render_examples(self, notes: list[Note]) -> str:
        if self.layout == "memco":  # the note's context as description, its content after it
            return memco_layout.render_examples(
                [memco_layout.execution_pattern(n.context, n.content) for n in notes]
            )
        return f"{prompts.MEMORY_HEADER}\n" + "\n\n".join(n.render() for n in notes)

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": len(self.notes),
            "memory_writes": self.counts["writes"],
            "memory_links": sum(len(n.links) for n in self.notes.values()),
            "memory_evolutions": self.counts["evolutions"],
            "memory_neighbour_updates": self.counts["neighbour_updates"],
            "memory_skipped_failed": self.counts["skipped"],
        }

    def size(self) -> int:
        return len(self.notes)

    def writing(self) -> dict[str, Any]:
        """The keys that decide what a note and its index row hold."""
        return {key: getattr(self, key) for key in WRITING_KEYS}

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "writing": self.writing(),
            "notes": [n.to_dict() for n in self.notes.values()],
            "index": self.index.to_dict(self.services.embedder_if_built),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        earlier = {
            "layout": "amem",
            "note_terms": "default",
            "index_text": self.DEFAULT_INDEX_TEXT[self.mode],
            "observation_chars": 300,
            "content_chars": 4000,
            "success_only": False,
            "note_content": "trajectory",
        }
        written = {**earlier, **state.get("writing", {})}
        differ = [k for k in WRITING_KEYS if written.get(k) != getattr(self, k)]
        if differ:
            was = " ".join(f"method.{k}={_value(written.get(k))}" for k in differ)
            now = " ".join(f"method.{k}={_value(getattr(self, k))}" for k in differ)
            raise ConfigError(
                f"memarena: this A-Mem snapshot's notes were written under {was}; the run asks "
                f"for {now}. Set those keys as the snapshot has them, or start a fresh run."
            )
        self.notes = {d["id"]: Note(**d) for d in state["notes"]}
        self.index = VectorIndex.from_dict(state["index"])
