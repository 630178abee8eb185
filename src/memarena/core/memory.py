"""The memory-method contract: :class:`MemoryMethod`, and the models it may use.

A method author's guide
=======================

A method is one sub-package ``memarena/memory/<name>/`` with a class that subclasses
:class:`MemoryMethod`, plus one config file ``conf/method/<name>.yaml`` (``_target_`` and the
paper's parameters). The pipeline drives every method through the members below and never
branches on a method's name; a method knows benchmarks only by ``env_name`` and the normalised
feedback in trajectories.

Construction
    The method's parameters are one frozen dataclass, its ``Settings``
    (:class:`~memarena.core.settings.MethodSettings`: ``Literal`` choices, ``Range`` bounds,
    ``reading(...)`` where the paper and the released code differ), and the constructor takes
    them: ``__init__(self, settings=None, /, **kwargs)`` calling
    ``super().__init__(settings, **kwargs)``, then reading ``self.settings``. Every key of the
    method's config (and of an ``ablation`` that sets ``method.*``) arrives as a keyword
    argument and becomes a field; the pipeline checks keys and values against the fields
    before any job starts, so a misspelled key or an invalid choice ends the run with a
    message. ``self.settings`` is resolved for the run's env (``MethodSettings.resolved``: an
    ``official`` reading becomes the released code's value), ``self.readings`` says which
    source each reading follows. The pipeline adds ``services`` (the models below) and
    ``env_name``.

Capabilities (one :class:`Capabilities` value, ``capabilities``)
    ``name`` and ``schema_version`` (bump it when the snapshot layout changes) are class
    attributes; everything else the pipeline reads is the method's :class:`Capabilities`:
    ``granularity``: ``"task"`` (retrieve once per episode) or ``"step"`` (before every step,
    as MemCo), ``acquisition_policy``: ``"agent"`` (the agent acts on the train tasks) or
    ``"expert"`` (the env's expert acts: ICL demonstrations), ``learns`` (False: no acquisition
    phase at all, e.g. ``none``), and the fields below. Declare the class's as
    ``capabilities = Capabilities(...)``; set one its settings decide in ``__init__`` by
    attribute (``self.acquisition_samples = s.samples``).

Acquisition (train split)
    The pipeline runs the train tasks and calls :meth:`observe_groups` with, per task, the
    ``acquisition_samples`` trajectories it sampled at ``acquisition_temperature`` (None: the
    protocol's). When ``retrieves_during_acquisition`` is True, tasks run in waves of
    ``protocol.update_every`` and later waves see what earlier ones wrote; when False, the
    memory is not read while acquiring, so tasks run at full concurrency and are observed
    ``acquisition_observe_tasks`` at a time (so a method can batch its own LLM calls).
    Implement :meth:`_observe` (one trajectory) or override :meth:`observe_groups`.

Evaluation (test split)
    :meth:`retrieve` returns a :class:`MemoryContext` (prompt slots + the ids of what was
    shown). :meth:`eval_views` lists the views evaluation runs under (MemCo: one per agent)
    and :meth:`set_view` selects one. ``benchmark_examples`` says how many of the benchmark's
    fixed worked examples the prompt shows (None: the env's setting, the same for every method;
    ICL: "all"). With ``protocol.freeze_during_eval`` the pipeline calls
    :meth:`freeze` first and :meth:`observe` is refused; otherwise the memory keeps learning,
    every ``protocol.update_every`` tasks, and may ask for retries of failed tasks through
    :meth:`reflect` / :meth:`observe_retry` (at most ``max_reflections``; ReMe).
    Episodes that start together (the first ``protocol.concurrency`` tasks of a wave, and any
    that start in the same lockstep) are asked in one :meth:`retrieve_batch`, so a method
    whose retrieval calls an LLM makes one batched call for them (default: :meth:`retrieve`
    each). ``history_steps`` (None: the protocol's) is how many of the episode's own past steps
    the agent's prompt keeps, for a method whose mechanism is that window (MemoryBank's
    forgetting inside a task, as G-Memory's code runs it).

Resume and retrieval-time state
    A resumed run does not retrieve for the episodes already on disk; it replays them from their
    records (:mod:`memarena.pipeline.learning`, :mod:`memarena.pipeline.acquire`, and the frozen
    evaluation's finished episodes). Whatever a retrieval changed in the memory must then be
    changed again, or the resumed memory differs from an uninterrupted one. The pipeline calls
    :meth:`replay_retrieval` for each recorded episode, at the point its retrieval was made
    (before the memory observes the episode's update), with the episode's trajectory (its
    ``memory_ids`` are what was shown) and what the retrievals cost the memory's own LLM; the
    default adds that cost back into ``token_usage`` / ``fallbacks`` (they are in the
    snapshot). A method whose retrieval changes more (recall strengthening, access times,
    retrieval counters, the ids a later observation scores) declares
    ``Capabilities(retrieval_mutates=True)`` and overrides :meth:`replay_retrieval` to re-apply
    it from the shown ids, reading its state as it is at that point (the same state the live
    retrieval saw).

Per-domain memories (MemCo's protocol, ``protocol.domain_memories: per_domain``)
    The pipeline keeps one instance of the method per source domain (``task.domain``), each
    acquiring only its domain's train tasks, and none of them reads another's memory while
    acquiring. When acquisition is done, and only then, a method with ``has_global = True``
    gets a global memory: a fresh instance whose :meth:`merge_domains` fills it from every
    domain's memory. Evaluation runs one view per domain (that domain's agent on the whole test
    set), whose retrievals go to :meth:`retrieve_in_team` on the domain's memory with the global
    one (default: the domain's own :meth:`retrieve`, no global). A method that keeps per-domain
    memories itself (MemCo) sets ``own_domain_memories = True`` and is not wrapped
    (:mod:`memarena.memory.team`).

Snapshot
    :meth:`save` / :meth:`load` write and read ``memory.json`` with ``name``, ``package`` (the
    Python package defining the method; its ``inspect`` module shows the snapshot) and
    ``schema_version``; implement :meth:`state_dict` / :meth:`load_state_dict` (JSON values
    only). Loading a snapshot must give a memory that answers exactly as the saved one did.

Metrics and token accounting
    :meth:`metrics` adds numbers about the memory's state to ``metrics.json`` (sizes, what
    it decided); :meth:`size` is the number of entries it holds (a memory of size 0 is flagged
    as degenerate). A method that calls an LLM counts its tokens per purpose in
    ``token_usage`` (``memarena.memory.llm_calls.add_usage`` does it) and its malformed
    answers in ``fallbacks``, and keeps both in its snapshot. The pipeline measures what each
    retrieval and each learning update adds to them and stores it with the episode records
    (:mod:`memarena.core.costs`), so the cost metrics (``retrieval_calls``,
    ``avg_mem_entries``, ``mem_words_per_call``, ``memory_tokens``, ``memory_token_usage``,
    ``memory_fallbacks``) come from the records on disk and survive a resume; a method never
    reports process counters itself.

LLM output
    Use the memory LLM (``self.services.llm``) with constrained requests (choices or a JSON
    schema) and survive malformed answers: count a fallback, log it once, never raise.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from memarena.core.costs import add_into
from memarena.core.errors import ConfigError, MemoryFrozenError
from memarena.core.gc_pause import gc_paused
from memarena.core.llm_types import ChatRequest, Completion, seeded_for_run
from memarena.core.progress import heartbeat
from memarena.core.protocols import Backbone, Embedder
from memarena.core.settings import MethodSettings, readings_of
from memarena.core.types import MemoryContext, MemoryQuery, Outcome, Trajectory

SNAPSHOT_FILE = "memory.json"
GRANULARITIES = ("task", "step")
ACQUISITION_POLICIES = ("agent", "expert")


class RunSeededLLM:
    """The memory-side backbone as a method sees it: every request that samples (temperature
    > 0) gets a seed derived from the run's seed and the request itself
    (:func:`~memarena.core.llm_types.seeded_for_run`), so the run seed varies the memory's
    draws as it varies the agent's, and the same seed replays them exactly. Everything else is
    the backbone's own (usage, fallbacks, context limits)."""

    def __init__(self, backbone: Backbone, run_seed: int) -> None:
        self.backbone = backbone
        self.run_seed = int(run_seed)

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        return self.backbone.generate([seeded_for_run(r, self.run_seed) for r in requests])

    def __getattr__(self, name: str) -> Any:
        if name == "backbone":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.backbone, name)

    def __setattr__(self, name: str, value: Any) -> None:
        """The wrapper's own two attributes here; anything else is the backbone's."""
        if name in ("backbone", "run_seed"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.backbone, name, value)

    def __repr__(self) -> str:
        return f"RunSeededLLM({self.backbone!r}, run_seed={self.run_seed})"


class MemoryServices:
    """Models a memory method may need, built on first use so methods that need none pay
    nothing: ``llm`` is the memory-side backbone (``conf/memory_backbone``) behind
    :class:`RunSeededLLM` (``seed``: the run's), ``embedder`` the sentence embedder
    (``conf/embedder``), and ``embedder_for(model, normalize)`` the same embedder with another
    model (a released checkpoint's own encoders). The pipeline closes what was built
    (``llm_if_built``: the backbone itself; ``embedders_built``)."""

    def __init__(
        self,
        llm_factory: Callable[[], Backbone] | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        seed: int = 0,
        named_embedder_factory: Callable[[str, bool], Embedder] | None = None,
    ) -> None:
        self._llm_factory = llm_factory
        self._embedder_factory = embedder_factory
        self._named_embedder_factory = named_embedder_factory
        self.seed = int(seed)
        self._llm: Backbone | None = None
        self._seeded: RunSeededLLM | None = None
        self._embedder: Embedder | None = None
        self._named: dict[tuple[str, bool], Embedder] = {}

    @property
    def llm(self) -> Backbone:
        if self._seeded is None:
            if self._llm_factory is None:
                raise ConfigError("this memory method needs an LLM but no memory_backbone is set")
            self._llm = self._llm_factory()
            self._seeded = RunSeededLLM(self._llm, self.seed)
        return self._seeded  # type: ignore[return-value]  (a Backbone by its members)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            if self._embedder_factory is None:
                raise ConfigError("this memory method needs an embedder but none is configured")
            self._embedder = self._embedder_factory()
        return self._embedder

    def embedder_for(self, model: str, normalize: bool = True) -> Embedder:
        """The configured embedder with ``model`` in place of its own (one per model and
        normalisation, built on first use)."""
        key = (model, bool(normalize))
        if key not in self._named:
            if self._named_embedder_factory is None:
                raise ConfigError(
                    f"this memory method needs the embedder {model!r} but no embedder is "
                    "configured"
                )
            self._named[key] = self._named_embedder_factory(model, bool(normalize))
        return self._named[key]

    @property
    def embedders_built(self) -> list[Embedder]:
        """Every embedder built so far: the configured one, then those of other models."""
        return ([self._embedder] if self._embedder is not None else []) + list(self._named.values())

    @property
    def llm_if_built(self) -> Backbone | None:
        return self._llm

    @property
    def embedder_if_built(self) -> Embedder | None:
        return self._embedder


@dataclass(frozen=True)
class Capabilities:
    """What a method is, as the pipeline reads it (one value, read and copied whole: a
    per-domain team carries its members' unchanged). A method declares its class's as
    ``capabilities = Capabilities(...)``; what its settings decide it sets in ``__init__``
    through the attribute of the same name (``self.acquisition_samples = s.samples``), which
    replaces the value on the instance."""

    granularity: Literal["task", "step"] = "task"  # retrieve once per episode, or every step
    acquisition_policy: Literal["agent", "expert"] = "agent"  # who acts on the train tasks
    learns: bool = True  # False: no acquisition phase at all (none, icl)
    # -- acquisition
    acquisition_samples: int = 1  # trajectories sampled per train task
    acquisition_temperature: float | None = None  # ... at this temperature (None: protocol's)
    retrieves_during_acquisition: bool = True  # the memory is read while acquiring
    acquisition_observe_tasks: int = 1  # tasks observed at a time when it is not
    # -- evaluation
    max_reflections: int = 0  # retries of a failed task a learning memory may ask for
    # how many of the benchmark's fixed worked examples the agent's prompt shows: None = the
    # env's ``fewshot`` setting (the same for every method), an int, or "all" (ICL)
    benchmark_examples: int | str | None = None
    # the agent's in-task history window this method imposes (None: ``protocol.history_steps``)
    history_steps: int | None = None
    # the released agent loop only: each shown observation of the episode's own past steps
    # whitespace-collapsed and cut to this many characters (None: whole; MemCo on ScienceWorld)
    history_observation_chars: int | None = None
    # retrieval changes the memory's state beyond its LLM cost counters (recalls strengthened,
    # access times, shown ids a later observation scores): a resume re-applies each recorded
    # retrieval through MemoryMethod.replay_retrieval (see the module docstring)
    retrieval_mutates: bool = False
    # -- per-domain memories (protocol.domain_memories: per_domain; see the module docstring)
    has_global: bool = False  # True: merge_domains builds a global memory after acquisition
    own_domain_memories: bool = False  # True: the method keeps per-domain memories itself

    def __post_init__(self) -> None:
        if self.granularity not in GRANULARITIES:
            raise ConfigError(f"Capabilities.granularity must be one of {GRANULARITIES}")
        if self.acquisition_policy not in ACQUISITION_POLICIES:
            raise ConfigError(
                f"Capabilities.acquisition_policy must be one of {ACQUISITION_POLICIES}"
            )


CAPABILITIES = tuple(f.name for f in fields(Capabilities))


def _capability(name: str) -> property:
    """``method.<name>``: the field of its :class:`Capabilities`; setting it replaces the
    instance's value with one that has the new field."""

    def get(self: MemoryMethod) -> Any:
        return getattr(self.capabilities, name)

    def set_(self: MemoryMethod, value: Any) -> None:
        self.capabilities = replace(self.capabilities, **{name: value})

    return property(get, set_, doc=f"Capabilities.{name} of this method")


class MemoryMethod:
    """Defaults for every member of the contract (see the module docstring)."""

    name: str = "base"
    schema_version: int = 1
    # what the pipeline reads of the method; each field is also an attribute (``self.learns``,
    # ``self.acquisition_samples``: the properties set after the class, :func:`_capability`)
    capabilities: Capabilities = Capabilities()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        plain = [n for n in CAPABILITIES if n in cls.__dict__ and not isinstance(
            cls.__dict__[n], property)]  # fmt: skip
        if plain:
            raise TypeError(
                f"{cls.__name__} sets {plain} as class attributes; declare them as "
                f"capabilities = Capabilities({plain[0]}=...) (memarena.core.memory)"
            )

    # the method's settings class (memarena.core.settings); the constructor takes an instance or
    # its fields as keyword arguments and keeps it, resolved for the env, as ``self.settings``
    Settings: type[MethodSettings] = MethodSettings

    def __init__(
        self,
        settings: MethodSettings | None = None,
        /,
        *,
        name: str | None = None,
        services: MemoryServices | None = None,
        env_name: str = "",
        **values: Any,
    ) -> None:
        given = self.Settings.take(settings, values)
        if values:
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword arguments: {sorted(values)}"
            )
        self.settings = given.resolved(env_name)
        # which source each reading follows (as configured: ``official`` is the released code's)
        self.readings = readings_of(given, "method")
        if name is not None:
            self.name = name
        self.services = services or MemoryServices()
        self.env_name = env_name
        self.frozen = False
        self.phase = "acquire"
        # {purpose: {calls, prompt_tokens, completion_tokens, ...}} of the method's own LLM calls
        self.token_usage: dict[str, dict[str, int]] = {}
        self.fallbacks: dict[str, int] = {}  # malformed LLM answers by kind

    # -- acquisition ---------------------------------------------------------------------------
    def begin_phase(self, phase: str) -> None:
        """Called by the pipeline as ``"acquire"`` and ``"eval"`` begin."""
        self.phase = phase

    def observe_groups(self, groups: list[list[tuple[Trajectory, Outcome]]]) -> None:
        """Each group holds the ``acquisition_samples`` trajectories of one task (one during
        evaluation), groups in task order. Default: :meth:`observe` each trajectory in order."""
        for group in groups:
            for trajectory, outcome in group:
                self.observe(trajectory, outcome)

    def observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        """Learn from one finished episode; refused when frozen."""
        self.refuse_if_frozen()
        self._observe(trajectory, outcome)

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        """What :meth:`observe` does once the frozen check passed. Default: nothing."""
        return None

    def refuse_if_frozen(self) -> None:
        """MemoryFrozenError when frozen (for every method entry point that learns)."""
        if self.frozen:
            raise MemoryFrozenError(
                f"memory '{self.name}' is frozen (evaluation with freeze_during_eval=true); "
                "it cannot observe new trajectories"
            )

    # -- evaluation ----------------------------------------------------------------------------
    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        """Prompt slots for the agent (per task or per step, see ``granularity``)."""
        return MemoryContext.empty()

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        """The contexts of several episodes starting together, in order. Default: one
        :meth:`retrieve` each; override to batch retrieval-time LLM calls."""
        return [self.retrieve(query) for query in queries]

    def replay_retrieval(self, trajectory: Trajectory, spent: Mapping[str, Any] | None) -> None:
        """Re-apply, on resume, what the retrievals of a recorded episode did to the memory
        (see the module docstring): ``trajectory`` as recorded (``memory_ids``: what was shown),
        ``spent``: the record's ``memory_cost`` (its ``usage`` / ``fallbacks``). Default: the
        cost added back into ``token_usage`` and ``fallbacks``; a method with
        ``retrieval_mutates`` also re-applies its own state changes (calling this first).
        Those changes must not depend on the order of the retrievals between two updates: a
        resume replays a chunk's finished episodes in the order they were written (a frozen
        evaluation writes them as they finish) and then retrieves for the rest, so every
        method's change is one the clock of the last update dates (access times, recall
        counts, a draw seeded by the task), the same in any order."""
        spent = spent or {}
        add_into(self.token_usage, spent.get("usage"))
        add_into(self.fallbacks, spent.get("fallbacks"))

    def eval_views(self) -> list[str | None]:
        """The views evaluation runs under, each over the whole test set. One view (None) by
        default; MemCo returns its agents (each agent's local memory + the global memory)."""
        return [None]

    def set_view(self, view: str | None) -> None:
        """Select the view for the following retrievals (see :meth:`eval_views`)."""
        if view is not None:
            raise ConfigError(f"memory '{self.name}' has no evaluation view {view!r}")

    def merge_domains(self, memories: dict[str, MemoryMethod]) -> None:
        """Called on a fresh instance (same config) that becomes the global memory, once every
        domain's memory (``{domain: memory}``, sorted by domain) has finished acquiring; only
        when ``has_global``. Default: nothing."""
        return None

    def retrieve_in_team(
        self, query: MemoryQuery, global_memory: MemoryMethod | None
    ) -> MemoryContext:
        """A domain agent's retrieval during evaluation under per-domain memories: this
        domain's memory with the global one (None without ``has_global``). Default: this
        memory's own :meth:`retrieve`."""
        return self.retrieve(query)

    def replay_retrieval_in_team(
        self,
        trajectory: Trajectory,
        spent: Mapping[str, Any] | None,
        global_memory: MemoryMethod | None,
    ) -> None:
        """:meth:`replay_retrieval` for a retrieval made through :meth:`retrieve_in_team`: on
        the memories that retrieval was asked of, so each holds what it held in the
        uninterrupted run (its cost included). Default: this domain's memory alone, as the
        default :meth:`retrieve_in_team` asks it alone."""
        self.replay_retrieval(trajectory, spent)

    def replay_retry_retrieval(self, trajectory: Trajectory, context: MemoryContext) -> None:
        """On resume, for a recorded retry that is not run again (``context``: what it was
        shown, as recorded): what :meth:`reflect` did to the memory when it made that context,
        again, at the start of the retry's attempt, where the live :meth:`reflect` runs.
        Default: nothing (reflect's lessons come back with :meth:`observe_retry`)."""
        return None

    def freeze(self) -> None:
        """Stop learning (frozen evaluation)."""
        self.frozen = True

    def reflect(
        self, failures: list[tuple[Trajectory, Outcome]], attempt: int
    ) -> list[MemoryContext | None]:
        """While learning during evaluation: for each failed episode, the context of a retry
        (lessons from the failure) or None for no retry. ``attempt`` counts from 1 up to
        ``max_reflections``; retries count in the metrics only under ``protocol.count_retries``
        (a retried task counts as its last trial, as ReMe's official agents record it).
        Default: no retries."""
        return [None] * len(failures)

    def observe_retry(
        self, trajectory: Trajectory, outcome: Outcome, attempt: int, context: MemoryContext
    ) -> None:
        """The result of a retry made with ``context`` (see :meth:`reflect`)."""
        return None

    # -- metrics and tokens --------------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        """Numbers about the memory's state added to ``metrics.json`` after evaluation (sizes,
        decisions made); none by default. Costs are not reported here (see the module
        docstring)."""
        return {}

    def size(self) -> int | None:
        """How many entries the memory holds (None: nothing countable, e.g. ``none``)."""
        return None

    def own_tokens(self) -> int:
        """Tokens of the method's own LLM calls so far (prompt + completion, summed over
        ``token_usage``)."""
        return sum(
            u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
            for u in self.token_usage.values()
        )

    # -- snapshot ------------------------------------------------------------------------------
    @property
    def package(self) -> str:
        """The Python package that defines the method (``memarena.memory.amem``). The snapshot
        records it, and its reader is that package's ``inspect`` module, whatever ``name`` the
        config gave the run (``amem_lite``, ``gmemory`` for a G-Memory variant, ...)."""
        return sys.modules[type(self).__module__].__package__ or ""

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        blob = {"method": self.name, "package": self.package, "schema_version": self.schema_version,
                "settings": self.settings.to_dict()}  # fmt: skip  (resolved for the run's env)
        with gc_paused():  # a large memory: collections would walk it on every allocation
            blob["state"] = self.state_dict()
            text = json.dumps(blob, ensure_ascii=False)
        tmp = directory / (SNAPSHOT_FILE + ".tmp")
        tmp.write_text(text)
        tmp.replace(directory / SNAPSHOT_FILE)

    def load(self, directory: Path) -> None:
        path = directory / SNAPSHOT_FILE
        if not path.exists():
            raise ConfigError(f"no memory snapshot at {path}; run acquisition first")
        megabytes = round(path.stat().st_size / 1e6, 1)
        with heartbeat(f"loading the {self.name} memory snapshot", megabytes, unit="MB"):
            with gc_paused():
                self._load_blob(path, directory)

    def _load_blob(self, path: Path, directory: Path) -> None:
        try:
            blob = json.loads(path.read_text())
            state = blob["state"]
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigError(
                f"memarena: the memory snapshot {path} is corrupt ({type(err).__name__}: "
                f"{err}). Delete {directory} to rebuild it from acquisition.jsonl (no episode "
                "is rerun), or start over with protocol.resume=false."
            ) from None
        if blob.get("method") != self.name or blob.get("schema_version") != self.schema_version:
            raise ConfigError(
                f"snapshot {path} was written by method={blob.get('method')} schema "
                f"v{blob.get('schema_version')}; this is method={self.name} "
                f"v{self.schema_version}. Use a fresh results dir or the matching method."
            )
        self.load_state_dict(state)

    def import_released(self, path: Path) -> None:
        """Fill this memory from a file a paper's authors released (``protocol.snapshot_from``
        naming a file, e.g. ReMe's experience pools); the pipeline then saves it as a snapshot.
        A method without such a reader refuses, naming the key."""
        raise ConfigError(
            f"memarena: protocol.snapshot_from={path} names a file, and method={self.name} reads "
            "no released memory file; give a run directory or an experiment name instead."
        )

    def state_dict(self) -> dict[str, Any]:
        """The memory as JSON values (see :meth:`save`)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


for _field in CAPABILITIES:  # method.<field> reads and sets the method's Capabilities
    setattr(MemoryMethod, _field, _capability(_field))
