"""``LangMem`` (LangChain 2025; ReMe's baseline) as ``method=langmem``: LangMem's episodic
memory, run by the real ``langmem`` package (``pip install -e '.[langmem]'``) over memarena's
backbones and embedder.

Memory: a LangGraph ``InMemoryStore`` indexed by ``services.embedder``, holding ``Episode``
items (observation, thoughts, action, result; :mod:`.schema`) under one fixed ``namespace``;
an item's store key is its memory id.

Learning (``observe``): each observed trajectory becomes a conversation (the task and first
observation, the agent's actions and what came back, the outcome; :mod:`.prompts`) that
``create_memory_store_manager(model, schemas=[Episode], query_limit=...)`` processes: the
manager searches the store for the ``query_limit`` most related memories (with the last turn
of the conversation as the query), shows them to the memory LLM with the conversation, and
applies the tool calls it answers (a new Episode is inserted, trustcall's PatchDoc updates a
shown one, RemoveDoc deletes one when ``enable_deletes``). The memory LLM is
``services.llm`` behind :class:`.chat_model.BackboneChatModel` (JSON-constrained tool calls,
tokens per purpose, fallbacks counted). As in ReMe's runs, only successful trajectories are
added (``success_only``).

Batching: the trajectories of an observed wave run through the manager as concurrent asyncio
tasks (``MemoryStoreManager.ainvoke`` each, as the Runnable's ``abatch`` would run them; they
are started here so each registers with the lockstep batcher and draws its own ids); their
model requests go to the backbone as one batched call per round. Every trajectory of a wave
sees the store as it was when the wave began.

Retrieval, once per task: ``store.search(namespace, query=<task goal>, limit=top_k)``, each
item shown as ``When: / Thought: / Did: / Result:`` lines (:func:`.schema.render_episode`).

Snapshot: the store's items (key, value) as JSON and their embeddings (base64 float32 with the
embedder's name and dim); loading puts the items back with those embeddings, so nothing is
embedded again and searches answer as before (an older snapshot, or another embedder: the
store embeds the items again as it puts them).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryQuery, Outcome, Trajectory
from memarena.core.typecheck import Count, Positive
from memarena.memory.episodic import BaselineSettings, ModalBaseline, Pair
from memarena.memory.langmem import prompts
from memarena.memory.langmem.schema import Episode, render_episode
from memarena.memory.llm_calls import clip_text, record_fallback
from memarena.memory.vectors import embedder_identity, pack, stored_matches, unpack

log = logging.getLogger(__name__)

SLOT = "langmem_episodes"
MANAGER_ERROR = "langmem_manager_error"  # fallback kind: the manager raised on a trajectory
ALL = 1_000_000_000  # "every item" for a store listing


def require_langmem() -> None:
    missing = [p for p in ("langmem", "langgraph", "trustcall") if not importlib.util.find_spec(p)]
    if missing:
        raise ConfigError(
            f"memarena: method=langmem runs the langmem package, and {', '.join(missing)} "
            "is not installed. Install the extra: pip install -e '.[langmem]' (pinned versions "
            "in pyproject.toml)."
        )


@dataclass(frozen=True)
class LangMemSettings(BaselineSettings):
    """LangMem's keys (``conf/method/langmem.yaml`` gives each one's source)."""

    mode: Literal["faithful"] = "faithful"
    query_limit: Count = 5
    namespace: Any = ("memories", "episodes")  # a name or a list of fixed names
    instructions: Literal["episodic", "package"] = "episodic"
    enable_inserts: bool = True
    enable_deletes: bool = False
    max_steps: Positive = 1
    success_only: bool = True
    index_fields: list[str] | None = None
    max_calls: Positive = 3
    field_chars: Positive = 400
    max_items: Positive = 4


class LangMem(ModalBaseline):
    """LangMem's episodic memory (parameters in ``conf/method/langmem.yaml``)."""

    name = "langmem"
    schema_version = 1
    MODES = ("faithful",)
    DEFAULT_TOP_K = {"faithful": 1}
    PURPOSES = ("extract", "update", "repair")
    COUNTS = ("observed", "writes", "updates", "deletes", "manager_errors")

    Settings = LangMemSettings

    def __init__(self, settings: LangMemSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: LangMemSettings = self.settings
        require_langmem()
        # a config list (Hydra's ListConfig) iterates as its items
        parts = s.namespace
        namespace = (parts,) if isinstance(parts, str) else tuple(str(p) for p in parts or ())
        if not namespace or any("{" in part or "}" in part for part in namespace):
            raise ConfigError(
                f"memarena: method.namespace={list(namespace)} must be a non-empty list of fixed "
                "names (LangMem's {template} parts need a LangGraph runtime config)."
            )
        if not s.enable_inserts and not s.enable_deletes:
            log.info("langmem: inserts off: the memory only changes what it already holds")
        self.namespace = namespace
        self.query_limit, self.instructions = s.query_limit, s.instructions
        self.enable_inserts, self.enable_deletes = s.enable_inserts, s.enable_deletes
        self.max_steps, self.success_only = s.max_steps, s.success_only
        self.index_fields = [str(f) for f in s.index_fields] if s.index_fields else None
        self.max_calls, self.field_chars = s.max_calls, s.field_chars
        self.max_items = s.max_items
        self._store: Any = None
        self._index: Any = None  # store.SearchIndex: the store's vectors, rebuilt per change
        self._manager: Any = None
        self._embeddings: Any = None
        self._bridge: Any = None
        self._logged_error = False

    # -- parts, built on first use -------------------------------------------------------------
    @property
    def store(self) -> Any:
        """The LangGraph store (built with the embedder on first use)."""
        if self._store is None:
            from memarena.memory.langmem.store import EmbedderEmbeddings, new_store

            self._embeddings = EmbedderEmbeddings(lambda: self.services.embedder)
            dims = self.services.embedder.dim
            self._store = new_store(self._embeddings, dims, self.index_fields)
        return self._store

    @property
    def bridge(self) -> Any:
        """The :class:`.chat_model.ToolCallBridge` between LangMem and ``services.llm``."""
        if self._bridge is None:
            from memarena.memory.langmem.chat_model import ToolCallBridge

            self._bridge = ToolCallBridge(
                lambda: self.services.llm,
                self,
                max_calls=self.max_calls,
                field_chars=self.field_chars,
                max_items=self.max_items,
                caps=self.token_caps,
                temperature=self.temperature,
            )
        return self._bridge

    @property
    def manager(self) -> Any:
        """LangMem's memory store manager over :attr:`store` and the backbone."""
        if self._manager is None:
            from langmem import create_memory_store_manager

            from memarena.memory.langmem.chat_model import BackboneChatModel

            extra = {} if self.instructions == "package" else {
                "instructions": prompts.EPISODIC_INSTRUCTIONS
            }  # fmt: skip
            self._manager = create_memory_store_manager(
                BackboneChatModel(bridge=self.bridge),
                schemas=[Episode],
                namespace=self.namespace,
                store=self.store,
                query_limit=self.query_limit,
                enable_inserts=self.enable_inserts,
                enable_deletes=self.enable_deletes,
                **extra,
            )
        return self._manager

    # -- learning ------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        work: list[tuple[list[Any], str]] = []
        for group in groups:
            for n, (trajectory, outcome) in enumerate(group):
                if outcome.success or not self.success_only:
                    seed = f"{trajectory.task.id}@{self.clock}" + (f".{n}" if n else "")
                    work.append((self.conversation(trajectory, outcome), seed))
            self.clock += 1
        if not work:
            return
        before = {item.key for item in self.items()}
        from memarena.memory.langmem.store import deterministic_ids

        with deterministic_ids():
            results = _run(self._wave(work))
        self._index = None  # the manager wrote to the store
        self.counts["observed"] += len(work)
        for puts in results:
            for put in puts:
                self.counts["updates" if put["key"] in before else "writes"] += 1
        after = {item.key for item in self.items()}
        self.counts["deletes"] += len(before - after)

    def conversation(self, trajectory: Trajectory, outcome: Outcome) -> list[Any]:
        """The trajectory as the conversation LangMem's manager reads."""
        from langchain_core.messages import AIMessage, HumanMessage

        goal, clip = trajectory.task.goal, self.observation_chars
        messages: list[Any] = [
            HumanMessage(
                prompts.TASK_TURN.format(
                    goal=goal, initial=clip_text(trajectory.initial_observation, clip)
                )
            )
        ]
        for step in trajectory.steps:
            messages.append(AIMessage(step.action))
            messages.append(HumanMessage(clip_text(step.observation, clip)))
        status = "solved" if outcome.success else f"failed (progress {outcome.progress:.2f})"
        steps = len(trajectory.steps)
        messages.append(
            HumanMessage(prompts.OUTCOME_TURN.format(goal=goal, status=status, steps=steps))
        )
        return messages

    async def _wave(self, work: list[tuple[list[Any], str]]) -> list[list[dict]]:
        manager, batcher = self.manager, self.bridge.batcher
        batcher.join(len(work))  # before any worker runs, so none is sent alone
        return list(await asyncio.gather(*(self._one(manager, m, s) for m, s in work)))

    async def _one(self, manager: Any, messages: list[Any], seed: str) -> list[dict]:
        """One trajectory through the manager: the store puts it made ([] when it failed)."""
        from langmem.errors import ConfigurationError

        from memarena.memory.langmem.store import CURRENT_IDS, IdStream

        CURRENT_IDS.set(IdStream(seed))  # this task's own context
        try:
            return await manager.ainvoke({"messages": messages, "max_steps": self.max_steps})
        except (Exception, ConfigurationError) as err:  # ConfigurationError is a BaseException
            self.counts["manager_errors"] += 1
            record_fallback(self.services.llm, MANAGER_ERROR, self.fallbacks)
            if not self._logged_error:
                self._logged_error = True
                log.warning(
                    "langmem: the memory manager failed on %s (%s: %s); counted as fallback %s",
                    seed, type(err).__name__, err, MANAGER_ERROR,
                )  # fmt: skip
            return []
        finally:
            self.bridge.batcher.leave()

    # -- retrieval -----------------------------------------------------------------------------
    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        if not queries or self.top_k == 0 or self._store is None:
            return [MemoryContext.empty() for _ in queries]
        goals = [q.task.goal for q in queries]
        if self._index is None:
            from memarena.memory.langmem.store import SearchIndex

            self._index = SearchIndex(self._store, tuple(self.namespace))
        with self._embeddings.primed(goals):  # one encode for the batch's queries
            vectors = [self._embeddings.embed_query(g) for g in goals]
        return [self._context(self._index.search(v, self.top_k)) for v in vectors]

    def _context(self, found: list[Any]) -> MemoryContext:
        shown = [(item.key, render_episode(item.value)) for item in found]
        shown = [(key, text) for key, text in shown if text]
        if not shown:
            return MemoryContext.empty()
        text = "\n\n".join([prompts.HEADER, *(t for _, t in shown)])
        return MemoryContext(slots={SLOT: text}, memory_ids=[key for key, _ in shown])

    # -- reporting and snapshots ---------------------------------------------------------------
    def items(self) -> list[Any]:
        """The store's items under the namespace, in insertion order."""
        if self._store is None:
            return []
        return list(self._store.search(self.namespace, limit=ALL))

    def size(self) -> int:
        return len(self.items())

    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": self.size(),
            "memory_observed": self.counts["observed"],
            "memory_writes": self.counts["writes"],
            "memory_updates": self.counts["updates"],
            "memory_deletes": self.counts["deletes"],
        }

    def state_dict(self) -> dict[str, Any]:
        """Items (key, value) as JSON, and the store's embedding of each (key, field path) as
        one base64 float32 matrix with the embedder's name and dim (``vectors``)."""
        items = [{"key": item.key, "value": item.value} for item in self.items()]
        state = {**self.common_state(), "namespace": list(self.namespace), "items": items}
        stored = getattr(self._store, "_vectors", None) if self._store is not None else None
        if stored is not None and items:
            where, rows = [], []
            by_key = stored.get(tuple(self.namespace), {})
            for item in items:
                for path, vector in by_key.get(item["key"], {}).items():
                    where.append([item["key"], path])
                    rows.append(vector)
            if rows:
                identity = embedder_identity(self.services.embedder)
                state["vectors"] = {"where": where, **pack(np.asarray(rows), identity)}
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """The items back in a fresh store. With the snapshot's ``vectors`` (same embedder),
        the items are put unindexed and their stored embeddings set as the store keeps them
        (``InMemoryStore._vectors[namespace][key][path]``), so nothing is embedded again;
        otherwise (older snapshots, another embedder) the store embeds them as it puts them."""
        self.load_common_state(state)
        self._store = self._manager = None  # a fresh store (the manager writes to it)
        self._index = None
        items = state.get("items", [])
        blob = state.get("vectors")
        store = self.store
        reuse = bool(
            items
            and blob
            and isinstance(getattr(store, "_vectors", None), dict)
            and stored_matches(blob.get("embedder") or {}, self.services.embedder, "LangMem")
        )
        # one put per item, in order: InMemoryStore.batch misaligns embeddings when two puts of
        # one batch embed the same text (langgraph 1.2.24), and a small model does write
        # duplicate episodes
        for item in items:
            value = dict(item["value"])
            if reuse:
                store.put(self.namespace, str(item["key"]), value, index=False)
            else:
                store.put(self.namespace, str(item["key"]), value)
        if reuse:
            vectors = store._vectors[tuple(self.namespace)]
            for (key, path), row in zip(blob["where"], unpack(blob), strict=True):
                vectors[str(key)][str(path)] = [float(x) for x in row]


def _run(coro: Any) -> Any:
    """Run a coroutine to its end from synchronous code (in a thread when this one already
    runs an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
