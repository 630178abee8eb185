"""Parts the trajectory-storing baselines share (MemoryBank, Voyager, Generative Agents).

- :class:`StoredTask`: one finished episode as these methods keep it (goal, outcome, the
  (action, observation) steps, the time it was written on the memory's clock), rendered into a
  prompt as a past example (:meth:`StoredTask.render`) or as the program of its valid actions
  (:meth:`StoredTask.program`).
- :class:`VectorIndex`: ids with unit-normalised embeddings in one float32 matrix; cosine search
  of the top-k among an allowed subset is one matrix-vector product; snapshots as base64.
- :class:`ModalBaseline`: what the three methods (and A-Mem, MemRL, MemSkill, LangMem) share
  around their mechanisms: the two modes (``parity``: as G-Memory's code runs them;
  ``faithful``: their papers), ``top_k`` with a default per mode, ``observation_chars``,
  ``max_tokens`` and ``temperature``, the memory's clock (tasks observed), counters,
  per-purpose token usage and fallbacks, and those parts of the snapshot.

The G-Memory reference code (bingreeky/GMemory, ``mas_memory/``) keeps these baselines' tasks
in a Chroma store searched by squared L2 over unit MiniLM embeddings, which ranks as cosine
does (``d = 2 - 2 cos``).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memarena.core import (
    ChatRequest,
    ConfigError,
    MemoryContext,
    MemoryMethod,
    MemoryQuery,
    Outcome,
    Trajectory,
)
from memarena.core.json_budget import reply_tokens, token_caps
from memarena.core.settings import MethodSettings, reading
from memarena.core.typecheck import Count, NonNegative, Positive
from memarena.memory.llm_calls import clip_text, json_batch
from memarena.memory.vectors import (
    QueryEncoder,
    embedder_identity,
    stored_matches,
    top_k,
    unit_rows,
)

CHUNK = 256  # rows the embedding matrix grows by
Pair = tuple[Trajectory, Outcome]  # one finished episode as the memory observes it

# the summary of a finished task that MemoryBank and Voyager key a stored task by in G-Memory's
# code (the same instruction for both: at most 6 sentences on one line); memarena's wording
SUMMARY_SYSTEM = (
    "You describe how an agent handled a task. Write at most 6 sentences on a single line: "
    "what the task asked, the actions that mattered and how it ended."
)
SUMMARY_USER = 'Trajectory:\n{trajectory}\n\nAnswer with JSON: {{"summary": "..."}}'


@dataclass
class StoredTask:
    """One finished episode. ``time`` is the index of the task on the memory's clock (the
    number of tasks the memory had observed before it)."""

    id: str
    goal: str
    success: bool
    progress: float = 0.0
    initial: str = ""
    steps: list[tuple[str, str, bool]] = field(default_factory=list)  # action, obs, valid
    time: int = 0

    @staticmethod
    def of(trajectory: Trajectory, outcome: Outcome, time: int, entry_id: str) -> StoredTask:
        steps = [(s.action, s.observation, bool(s.feedback.valid_action)) for s in trajectory.steps]
        return StoredTask(
            id=entry_id,
            goal=trajectory.task.goal,
            success=bool(outcome.success),
            progress=float(outcome.progress),
            initial=trajectory.initial_observation,
            steps=steps,
            time=int(time),
        )

    @property
    def status(self) -> str:
        return "solved" if self.success else f"failed, progress {self.progress:.2f}"

    def render(self, observation_chars: int | None = 300) -> str:
        """The task, its outcome and the trajectory as it happened (``> action`` / observation
        lines, the way the reference's ``format_task_context`` shows a past task); each
        observation cut to ``observation_chars`` (None: whole, as it came)."""

        def shown(text: str) -> str:
            if observation_chars is None:
                return str(text).strip()
            return clip_text(text, observation_chars)

        lines = [f"Task: {self.goal} ({self.status})"]
        if self.initial:
            lines.append(shown(self.initial))
        for action, observation, _ in self.steps:
            lines += [f"> {clip_text(action, 200)}", shown(observation)]
        return "\n".join(lines)

    def program(self) -> list[str]:
        """The actions the env accepted, in order (a skill's "program" in Voyager's sense)."""
        return [action for action, _, valid in self.steps if valid]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["steps"] = [list(s) for s in self.steps]
        return out

    @staticmethod
    def from_dict(d: dict[str, Any]) -> StoredTask:
        steps = [(str(a), str(o), bool(v)) for a, o, v in d.get("steps", [])]
        return StoredTask(**{**d, "steps": steps})


def stored_tasks(groups: list[list[Pair]], clock: int) -> tuple[list[StoredTask], int]:
    """The episodes of observed ``groups`` (one group per task, in order) as stored tasks: the
    n-th task gets time ``clock + n``; ids ``<task id>@<time>`` (``.k`` for a group's k-th
    sample). Returns them and the clock after them."""
    out: list[StoredTask] = []
    for group in groups:
        for n, (trajectory, outcome) in enumerate(group):
            entry_id = f"{trajectory.task.id}@{clock}" + (f".{n}" if n else "")
            out.append(StoredTask.of(trajectory, outcome, clock, entry_id))
        clock += 1
    return out, clock


class VectorIndex:
    """Unit embeddings by id; cosine top-k with an optional filter on ids."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.stored_embedder: dict[str, Any] = {}  # what a loaded snapshot recorded

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self.row

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[: len(self.ids)]

    def add(self, entry_id: str, vector: np.ndarray) -> None:
        """Add (or replace) the embedding of ``entry_id``."""
        vector = _unit(vector)
        if entry_id in self.row:
            self._matrix[self.row[entry_id]] = vector
            return
        n = len(self.ids)
        if self._matrix.shape[0] <= n:
            grown = np.zeros((n + CHUNK, vector.shape[0]), dtype=np.float32)
            if n:
                grown[:n] = self._matrix[:n]
            self._matrix = grown
        self._matrix[n] = vector
        self.row[entry_id] = n
        self.ids.append(entry_id)

    def remove(self, entry_ids: Iterable[str]) -> None:
        gone = set(entry_ids) & set(self.row)
        if not gone:
            return
        keep = [i for i in self.ids if i not in gone]
        rows = [self.row[i] for i in keep]
        self._matrix = self._matrix[rows].copy()
        self.ids = keep
        self.row = {i: n for n, i in enumerate(keep)}

    def similarity(self, vector: np.ndarray) -> dict[str, float]:
        """Cosine of ``vector`` with every stored embedding."""
        if not self.ids:
            return {}
        sims = self.matrix @ _unit(vector)
        return dict(zip(self.ids, sims.tolist(), strict=True))

    def search(
        self, vector: np.ndarray, k: int, allowed: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` most similar ids (among those ``allowed`` accepts), most similar first;
        ties keep insertion order. The best rows come from ``argpartition`` (a full sort only
        when the filter rejects most of them)."""
        if k <= 0 or not self.ids:
            return []
        sims = self.matrix @ _unit(vector)
        want = k if allowed is None else 4 * k
        while True:
            order = top_k(sims, want)
            out: list[tuple[str, float]] = []
            for n in order:
                entry_id = self.ids[int(n)]
                if allowed is None or allowed(entry_id):
                    out.append((entry_id, float(sims[n])))
                    if len(out) == k:
                        return out
            if len(order) == sims.size:
                return out
            want = sims.size if want * 4 >= sims.size else want * 4

    def to_dict(self, embedder: Any = None) -> dict[str, Any]:
        """Ids in order and the matrix as base64 of its little-endian float32 bytes, with the
        name and dim of ``embedder`` (the one the rows came from) when given."""
        matrix = self.matrix
        out = {
            "ids": list(self.ids),
            "dim": int(matrix.shape[1]) if matrix.size else 0,
            "embeddings_b64": base64.b64encode(matrix.astype("<f4").tobytes()).decode("ascii"),
        }
        identity = self.stored_embedder or (
            embedder_identity(embedder) if embedder is not None and self.ids else {}
        )
        if identity:
            out["embedder"] = dict(identity)
        return out

    def verify(self, embedder: Any, texts: Callable[[list[str]], list[str]], what: str) -> None:
        """Once after a load: keep the stored rows when they came from ``embedder`` (or the
        snapshot does not say), else embed ``texts(ids)`` again, with a warning."""
        stored, self.stored_embedder = self.stored_embedder, {}
        if not stored or not self.ids or stored_matches(stored, embedder, what):
            return
        ids = list(self.ids)
        vectors = unit_rows(embedder.encode(texts(ids)))
        self._matrix = np.zeros((len(ids) + CHUNK, vectors.shape[1]), dtype=np.float32)
        self._matrix[: len(ids)] = vectors

    @staticmethod
    def from_dict(d: dict[str, Any]) -> VectorIndex:
        """The stored rows as they are (one copy, no per-row work, nothing embedded)."""
        index = VectorIndex()
        dim = int(d.get("dim", 0))
        raw = np.frombuffer(base64.b64decode(d.get("embeddings_b64", "")), dtype="<f4")
        matrix = raw.astype(np.float32).reshape(-1, dim) if dim else raw.reshape(0, 0)
        ids = list(d.get("ids", []))
        if len(ids) != len(matrix) or len(set(ids)) != len(ids):
            raise ValueError(f"VectorIndex: {len(ids)} ids for {len(matrix)} stored rows")
        if ids:
            index._matrix = np.zeros((len(ids) + CHUNK, dim), dtype=np.float32)
            index._matrix[: len(ids)] = matrix  # saved unit rows, bit for bit
            index.ids = ids
            index.row = {entry_id: n for n, entry_id in enumerate(ids)}
        index.stored_embedder = dict(d.get("embedder") or {})
        return index


def verify_indexes(
    embedder: Callable[[], Any],
    indexes: list[tuple[VectorIndex, Callable[[list[str]], list[str]]]],
    what: str,
) -> None:
    """:meth:`VectorIndex.verify` of each (index, texts of its ids) a method keeps; the
    embedder (``embedder()``) is only built when a loaded index names one."""
    for index, texts in indexes:
        if index.stored_embedder:
            index.verify(embedder(), texts, what)


def _unit(vector: Any) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def json_request(
    system: str, user: str, schema: dict[str, Any], cap: int | None, temperature: float = 0.0
) -> ChatRequest:
    """A JSON-schema constrained request of the memory LLM. Its ``max_tokens`` is the longest
    valid answer of ``schema`` (:func:`memarena.core.json_budget.reply_tokens`), or ``cap``
    when smaller (None: no cap)."""
    return ChatRequest(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        json_schema=schema,
        max_tokens=reply_tokens(schema, cap),
        temperature=temperature,
    )


def text_field(answer: Any, key: str, limit: int) -> str | None:
    """``answer[key]`` as one clipped line, or None when the answer lacks a usable string."""
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    return clip_text(value, limit)


def int_field(answer: Any, key: str, low: int, high: int) -> int | None:
    """``answer[key]`` when it is an int in [low, high], else None."""
    value = answer.get(key) if isinstance(answer, dict) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    return value if ok else None


def summary_schema(max_chars: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"summary": {"type": "string", "maxLength": max_chars}},
        "required": ["summary"],
        "additionalProperties": False,
    }


MODES = ("parity", "faithful")


@dataclass(frozen=True)
class BaselineSettings(MethodSettings):
    """The keys every :class:`ModalBaseline` takes; each subclass's settings add its own and
    narrow ``mode`` to its modes."""

    mode: str | None = None  # null: the method's first mode
    top_k: Count | None = None  # null: the mode's
    observe_batch: Positive = 16
    # each observation cut to this in what the memory stores, summarizes and shows; None: whole
    observation_chars: Positive | None = 300
    max_tokens: Any = None
    temperature: NonNegative | None = None  # null: the method's TEMPERATURE


def whole_observations() -> Any:
    """``observation_chars`` of the baselines G-Memory's code runs (MemoryBank, Voyager,
    Generative Agents): whole, as its ``format_task_context`` shows a past task; memarena's
    earlier reading: 300."""
    return reading(None, released=None, memarena=300)


class ModalBaseline(MemoryMethod):
    """Base of MemoryBank, Voyager and Generative Agents (see the module docstring).

    Subclasses set ``name`` (the method, also the fallback-kind prefix), ``MODES`` (when not
    parity / faithful), ``DEFAULT_TOP_K`` ({mode: k}), ``PURPOSES`` (their LLM calls),
    ``COUNTS`` (their counters) and ``TEMPERATURE`` (when not 0), and implement
    ``observe_groups`` and ``retrieve_batch``.

    The keys every subclass takes: ``mode``, ``top_k``, ``observe_batch``,
    ``observation_chars`` (each observation clipped to this in what the memory stores or
    sends), ``max_tokens`` (:meth:`set_token_caps`) and ``temperature`` (the memory LLM's;
    null: the class's ``TEMPERATURE``)."""

    MODES: tuple[str, ...] = MODES  # the first is the default
    DEFAULT_TOP_K: dict[str, int] = {"parity": 1, "faithful": 1}
    PURPOSES: tuple[str, ...] = ()
    COUNTS: tuple[str, ...] = ("writes",)
    TEMPERATURE: float = 0.0  # the memory LLM's sampling temperature when the config gives none

    Settings = BaselineSettings

    def __init__(self, settings: BaselineSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: BaselineSettings = self.settings
        mode = self.MODES[0] if s.mode is None else s.mode
        if mode not in self.MODES:
            raise ConfigError(f"memarena: method.mode={mode!r}; valid values: {list(self.MODES)}.")
        self.mode = mode
        self.top_k = self.DEFAULT_TOP_K[mode] if s.top_k is None else int(s.top_k)
        # the memory is read while acquiring (waves of protocol.update_every); without it
        # tasks are observed this many at a time, one batched call per purpose
        self.acquisition_observe_tasks = s.observe_batch
        self.clock = 0  # tasks observed so far: the memory's time
        self.counts = {c: 0 for c in self.COUNTS}
        self.token_usage = {p: {} for p in self.PURPOSES}
        self.fallbacks: dict[str, int] = {}
        self.observation_chars = s.observation_chars
        self.token_caps: dict[str, int | None] = {}
        self.set_token_caps(s.max_tokens)
        # a per-purpose mapping (MemRL's) is the subclass's to read
        number = isinstance(s.temperature, int | float) and not isinstance(s.temperature, bool)
        self.temperature = float(s.temperature if number else self.TEMPERATURE)

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        self.observe_groups([[(trajectory, outcome)]])

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.retrieve_batch([query])[0]

    def encode_queries(self, goals: list[str]) -> np.ndarray:
        """The embeddings of a wave's task goals: one ``encode`` call for those not seen
        before (a bounded LRU keeps the rest: the same test task comes back in every run)."""
        encoder = getattr(self, "_query_encoder", None)
        if encoder is None:
            encoder = QueryEncoder(
                lambda texts: self.services.embedder.encode(texts), normalize=False
            )
            self._query_encoder = encoder
        return encoder(goals)

    def embedding_indexes(self) -> list[tuple[VectorIndex, Callable[[list[str]], list[str]]]]:
        """(index, the texts its ids were embedded from) of every index the method keeps."""
        return []

    def verify_embeddings(self) -> None:
        """After a load (called as retrieval and observation start): an index whose snapshot
        names another embedder than this run's is embedded again, with a warning; otherwise
        the stored rows are used as they are."""
        verify_indexes(lambda: self.services.embedder, self.embedding_indexes(), self.name)

    def set_token_caps(self, max_tokens: Any) -> None:
        """``method.max_tokens`` as ``self.token_caps`` ({purpose: cap or None}): null asks
        every purpose for the bound of its answer's schema, an int caps every purpose, a
        mapping caps the purposes it names (:func:`memarena.core.json_budget.token_caps`)."""
        self.token_caps = token_caps(max_tokens, self.PURPOSES, "method")

    def _ask(self, purpose: str, requests: list[ChatRequest]) -> list[Any]:
        """One batched JSON call for ``purpose``, counted under it."""
        return json_batch(
            self.services.llm,
            requests,
            usage=self.token_usage[purpose],
            fallbacks=self.fallbacks,
            kind=f"{type(self).name}_{purpose}",
        )

    def summarize(self, tasks: list[StoredTask]) -> list[str]:
        """One batched ``summary`` call: a summary per task (:data:`SUMMARY_SYSTEM`); an
        unusable answer is a counted fallback and the task's goal stands in. Reads the
        subclass's ``summary_chars``, ``observation_chars``, ``trajectory_chars``,
        ``token_caps`` and ``temperature``."""
        requests = [
            json_request(
                SUMMARY_SYSTEM,
                SUMMARY_USER.format(
                    trajectory=t.render(self.observation_chars)[: self.trajectory_chars]
                ),
                summary_schema(self.summary_chars),
                self.token_caps["summary"],
                self.temperature,
            )
            for t in tasks
        ]
        answers = self._ask("summary", requests)
        return [
            text_field(a, "summary", self.summary_chars) or t.goal
            for a, t in zip(answers, tasks, strict=True)
        ]

    def common_state(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "clock": self.clock,
            "counts": dict(self.counts),
            "token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "fallbacks": dict(self.fallbacks),
        }

    def load_common_state(self, state: dict[str, Any]) -> None:
        if state.get("mode", self.mode) != self.mode:
            raise ConfigError(
                f"memarena: this snapshot was written in method.mode={state['mode']}; the run "
                f"asks for mode={self.mode}. Use method.mode={state['mode']} or a fresh run."
            )
        self.clock = int(state["clock"])
        self.counts = {**self.counts, **state.get("counts", {})}
        usage = state.get("token_usage", {})
        self.token_usage = {p: dict(usage.get(p, {})) for p in self.PURPOSES}
        self.fallbacks = dict(state.get("fallbacks", {}))
