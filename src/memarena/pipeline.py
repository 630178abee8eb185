"""acquisition -> memory snapshot -> evaluation -> metrics, for any method x env x backbone.

The pipeline builds the parts from the config with ``hydra.utils.instantiate`` and never
branches on method or env names. It is resumable: every finished episode is appended to disk
as it ends, and a rerun with the same run directory continues where the last one stopped.

- Acquisition runs the train tasks in waves; a method may ask for ``acquisition_samples``
  trajectories per task (ReMe: N=8 at ``acquisition_temperature`` 0.9, each sample with its
  own request seeds). The records are appended to ``acquisition.jsonl`` after each wave
  (with the full trajectory; ``run`` = sample index); the memory observes the tasks as groups
  of samples, in task order (``observe_groups``), after each wave or, for a method that does
  not retrieve while acquiring, every ``acquisition_observe_tasks`` tasks (bigger LLM batches).
  On resume the complete groups are observed again in file order, which rebuilds the memory without
  rerunning any episode (LLM-side memory calls are served by the call cache).
- The snapshot is written to ``memory/`` and marked complete; a later resume loads it.
- Evaluation runs ``protocol.repetitions`` x ``protocol.runs`` runs (Avg@k / Pass@k per
  repetition). With a frozen memory it keeps ``concurrency`` episodes in flight and appends
  each episode to ``episodes.jsonl`` as it ends. With ``freeze_during_eval=false`` (dynamic
  variants) it runs in waves, every run starting from the snapshot; after each wave a method
  with ``max_reflections`` > 0 may retry its failed tasks with lessons (``reflect``); retries
  go to ``reflections.jsonl``, are observed by the memory and never count in the metrics.
  A wave's episodes are written after its retries, so a killed wave is redone whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from memarena.agent import EpisodeResult, EpisodeRunner, RunnerSettings
from memarena.core import (
    Backbone,
    ConfigError,
    Env,
    MemarenaError,
    MemoryContext,
    MemoryQuery,
    Outcome,
    Task,
    Trajectory,
)
from memarena.memory.base import BaseMemory, MemoryServices
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.store import RunStore, run_dir_for

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 48  # tokens per agent reply when neither the protocol nor the env sets it


@dataclass
class Parts:
    env: Env
    backbone: Backbone
    memory: BaseMemory
    services: MemoryServices
    settings: RunnerSettings
    store: RunStore
    # the method's own LLM tokens during evaluation (summed over runs; a learning memory is
    # reloaded from the snapshot before each run, which also resets its counters)
    eval_memory_tokens: int = 0


# --------------------------------------------------------------------------------------------
# wiring


def run_dir(cfg: DictConfig) -> Path:
    return run_dir_for(
        cfg.paths.results_dir,
        cfg.experiment_name,
        cfg.env.name,
        cfg.method.name,
        cfg.ablation.get("name"),
        cfg.backbone.name,
        cfg.seed,
    )


def check_config(cfg: DictConfig) -> None:
    """Cross-group consistency that a single config group cannot check by itself."""
    for group in ("env", "method", "backbone"):
        if "name" not in cfg[group]:
            raise ConfigError(f"conf/{group}/*.yaml must set `name` (used in result paths)")
    wanted = cfg.ablation.get("method")
    if wanted is not None and wanted != cfg.method.name:
        raise ConfigError(
            f"ablation={cfg.ablation.name} belongs to method={wanted}, but method="
            f"{cfg.method.name}. Add method={wanted} or drop the ablation."
        )


def _memory_llm_factory(cfg: DictConfig, agent: Backbone):
    mb = cfg.memory_backbone

    def build() -> Backbone:
        if mb.get("same_as_agent", False):
            if agent.is_llm:
                return agent
            log.info(
                "agent backbone %s is not an LLM; memory calls use %s", agent.name, mb.fallback.name
            )
            return build_part(mb.fallback)
        # resolved first: a detached copy cannot see ${paths...} interpolations any more
        plain = OmegaConf.to_container(mb, resolve=True)
        plain.pop("same_as_agent", None)
        return build_part(OmegaConf.create(plain))

    return build


def build_part(node: DictConfig, **kwargs: Any) -> Any:
    """``instantiate`` that lets a constructor's own MemarenaError (a config message) through
    instead of Hydra's wrapper, so the run ends with that one message."""
    try:
        return instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as exc:
        cause = exc.__cause__
        while cause is not None and not isinstance(cause, MemarenaError):
            cause = cause.__cause__
        if cause is not None:
            raise cause from None
        raise


def build(cfg: DictConfig) -> Parts:
    check_config(cfg)
    store = RunStore(run_dir(cfg))
    if not cfg.protocol.resume:
        store.clear()
    store.write_text(files.CONFIG, OmegaConf.to_yaml(cfg, resolve=True))
    env: Env = build_part(cfg.env)
    backbone: Backbone = build_part(cfg.backbone)
    services = MemoryServices(
        llm_factory=_memory_llm_factory(cfg, backbone),
        embedder_factory=lambda: build_part(cfg.embedder),
    )
    memory = build_part(cfg.method, services=services, env_name=env.name)
    budget = cfg.protocol.step_budget or env.step_budget
    settings = RunnerSettings(
        concurrency=cfg.protocol.concurrency,
        step_budget=budget,
        history_steps=cfg.protocol.history_steps,
        action_mode=cfg.protocol.action_mode,
        temperature=cfg.protocol.temperature,
        max_tokens=cfg.protocol.max_tokens or getattr(env, "max_tokens", DEFAULT_MAX_TOKENS),
        seed=cfg.seed,
    )
    return Parts(env, backbone, memory, services, settings, store)


# --------------------------------------------------------------------------------------------
# records


def _record(
    result: EpisodeResult,
    run: int,
    *,
    agent: str | None = None,
    with_trajectory: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    task, out = result.trajectory.task, result.outcome
    rec: dict[str, Any] = {
        "task_id": task.id,
        "split": task.split,
        "domain": task.domain,
        "run": run,
        **extra,
        "agent": agent,
        "success": out.success,
        "progress": out.progress,
        "steps": out.steps,
        "status": out.status,
        "error": out.error,
        "prompt_tokens": out.prompt_tokens,
        "completion_tokens": out.completion_tokens,
        "tokens": out.tokens,
        "memory_ids": list(result.trajectory.memory_ids),
        "wall_s": round(result.wall_s, 4),
    }
    if result.details:
        rec["details"] = result.details
    if with_trajectory:
        rec["outcome"] = {
            k: getattr(out, k)
            for k in (
                "success",
                "progress",
                "steps",
                "status",
                "error",
                "prompt_tokens",
                "completion_tokens",
            )
        }
        rec["trajectory"] = result.trajectory.to_dict()
    return rec


def _pair(rec: dict[str, Any]) -> tuple[Trajectory, Outcome]:
    return Trajectory.from_dict(rec["trajectory"]), Outcome(**rec["outcome"])


def _waves(tasks: Sequence[Task], size: int) -> Iterator[list[Task]]:
    for i in range(0, len(tasks), size):
        yield list(tasks[i : i + size])


def cap_tasks(tasks: list[Task], limit: int | None) -> list[Task]:
    """The first ``limit`` tasks taken round-robin over domains, so a cap keeps every domain
    represented (8 PDDL tasks = 2 per domain); order within a domain is kept."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    by_domain: dict[str, list[Task]] = {}
    for task in tasks:
        by_domain.setdefault(task.domain, []).append(task)
    picked: list[Task] = []
    queues = [list(reversed(q)) for q in by_domain.values()]
    while len(picked) < limit:
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop())
    return picked


# --------------------------------------------------------------------------------------------
# acquisition


def _sample_groups(records: Sequence[dict[str, Any]], n: int) -> dict[str, list[dict[str, Any]]]:
    """Complete groups of ``n`` samples per task id (the last record of each sample wins),
    in the order the tasks first appear."""
    groups: dict[str, dict[int, dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault(rec["task_id"], {})[int(rec.get("run") or 0)] = rec
    return {
        tid: [by_run[i] for i in range(n)]
        for tid, by_run in groups.items()
        if all(i in by_run for i in range(n))
    }


def acquire(parts: Parts, cfg: DictConfig, policy: Backbone) -> None:
    memory, store = parts.memory, parts.store
    if not memory.learns:
        return
    memory.begin_phase("acquire")
    source = cfg.protocol.get("snapshot_from")
    if source:
        snapshot = _snapshot_dir(source)
        log.info("evaluating on the saved snapshot %s (no acquisition)", snapshot)
        memory.load(snapshot)
        return
    if store.snapshot_complete():
        log.info("memory snapshot found in %s; skipping acquisition", store.memory_dir)
        memory.load(store.memory_dir)
        return
    tasks = cap_tasks(parts.env.tasks(cfg.protocol.train_split), cfg.protocol.max_train_tasks)
    n = max(1, int(memory.acquisition_samples))
    done = _sample_groups(store.read(files.ACQUISITION), n)
    if done:
        memory.observe_groups([[_pair(r) for r in group] for group in done.values()])
    remaining = [t for t in tasks if t.id not in done]
    log.info(
        "acquisition: %d train tasks x %d sample(s) (%d tasks already done)",
        len(tasks),
        n,
        len(tasks) - len(remaining),
    )
    settings = parts.settings
    if memory.acquisition_temperature is not None:
        settings = replace(settings, temperature=float(memory.acquisition_temperature))
    runner = EpisodeRunner(parts.env, policy, memory, settings, phase="acquire")
    pending: list[list[tuple[Trajectory, Outcome]]] = []
    for wave in _waves(remaining, max(1, settings.concurrency // n)):
        pairs = [(task, s) for task in wave for s in range(n)]
        results = runner.run([t for t, _ in pairs], runs=[s for _, s in pairs])
        for result in results:
            store.append(files.ACQUISITION, _record(result, pairs[result.order][1]))
        for i in range(len(wave)):
            pending.append([(r.trajectory, r.outcome) for r in results[i * n : (i + 1) * n]])
        if len(pending) >= max(1, int(memory.acquisition_observe_tasks)):
            memory.observe_groups(pending)
            pending = []
    if pending:
        memory.observe_groups(pending)
    memory.save(store.memory_dir)
    store.mark_snapshot_complete({"n_train_tasks": len(tasks), "method": memory.name})


def _snapshot_dir(source: str) -> Path:
    """The memory folder of ``protocol.snapshot_from`` (a run directory or its memory/)."""
    path = Path(source)
    for folder in (path / files.MEMORY_DIR, path):
        if (folder / files.SNAPSHOT_DONE).exists():
            return folder
    raise ConfigError(
        f"protocol.snapshot_from={source} holds no complete memory snapshot (memory/"
        "SNAPSHOT_COMPLETE). Run the base configuration first (its run directory is "
        "results/<experiment>/<env>/<method>/<backbone>/seed<k>), or unset snapshot_from."
    )


# --------------------------------------------------------------------------------------------
# evaluation


def _start_snapshot(parts: Parts, cfg: DictConfig) -> Path | None:
    """The snapshot evaluation starts from: ``protocol.snapshot_from`` or this run's own."""
    source = cfg.protocol.get("snapshot_from")
    if source:
        return _snapshot_dir(source)
    return parts.store.memory_dir if parts.store.snapshot_complete() else None


def _key(rec: dict[str, Any]) -> tuple[Any, int, str]:
    return rec.get("agent"), rec["run"], rec["task_id"]


class _FixedContext:
    """Stands in for the memory during a retry: every task gets the context the memory's
    ``reflect`` gave for it (its lessons), retrieved once per task."""

    granularity = "task"

    def __init__(self, contexts: dict[str, MemoryContext]) -> None:
        self.contexts = contexts

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.contexts.get(query.task.id, MemoryContext.empty())


@dataclass
class _Learning:
    """Evaluation with a memory that keeps learning (dynamic variants): waves of episodes,
    observed in task order, then failure-aware retries while the memory asks for them."""

    parts: Parts
    run: int
    agent: str | None
    repetition: int

    def replay(self, done: Sequence[dict[str, Any]], retries: Sequence[dict[str, Any]]) -> None:
        """Rebuild the memory from finished episodes and their retries, wave by wave."""
        last = {(_key(rec), rec["attempt"]): rec for rec in retries}  # a redone wave wins
        by_key: dict[tuple[Any, int, str], list[dict[str, Any]]] = {}
        for (key, _), rec in last.items():
            by_key.setdefault(key, []).append(rec)
        for i in range(0, len(done), self.parts.settings.concurrency):
            wave = done[i : i + self.parts.settings.concurrency]
            self.parts.memory.observe_groups([[_pair(rec)] for rec in wave])
            again = [r for rec in wave for r in by_key.get(_key(rec), [])]
            for rec in sorted(again, key=lambda r: r["attempt"]):
                context = MemoryContext(**rec["context"])
                self.parts.memory.observe_retry(*_pair(rec), rec["attempt"], context)

    def episodes(self, runner: EpisodeRunner, tasks: Sequence[Task]) -> None:
        memory, store = self.parts.memory, self.parts.store
        for wave in _waves(tasks, self.parts.settings.concurrency):
            results = runner.run(wave)
            memory.observe_groups([[(r.trajectory, r.outcome)] for r in results])
            self._retries([r for r in results if not r.outcome.success])
            for result in results:  # written last: a killed wave is redone whole
                store.append(files.EPISODES, self._rec(result))

    def _rec(self, result: EpisodeResult, **extra: Any) -> dict[str, Any]:
        return _record(result, self.run, agent=self.agent, repetition=self.repetition, **extra)

    def _retries(self, failed: list[EpisodeResult]) -> None:
        memory = self.parts.memory
        for attempt in range(1, int(memory.max_reflections) + 1):
            if not failed:
                return
            contexts = memory.reflect([(r.trajectory, r.outcome) for r in failed], attempt)
            asked = {r.trajectory.task.id: c for r, c in zip(failed, contexts, strict=True) if c}
            if not asked:
                return
            runner = EpisodeRunner(
                self.parts.env,
                self.parts.backbone,
                _FixedContext(asked),  # type: ignore[arg-type]
                self.parts.settings,
                phase=f"reflect{attempt}",
                run=self.run,
                progress_bar=False,
            )
            tasks = [r.trajectory.task for r in failed if r.trajectory.task.id in asked]
            failed = []
            for result in runner.run(tasks):
                context = asked[result.trajectory.task.id]
                memory.observe_retry(result.trajectory, result.outcome, attempt, context)
                self.parts.store.append(
                    files.REFLECTIONS,
                    self._rec(result, attempt=attempt, context=asdict(context)),
                )
                if not result.outcome.success:
                    failed.append(result)


def evaluate(parts: Parts, cfg: DictConfig) -> list[dict[str, Any]]:
    """Every run of every evaluation view (MemCo: each agent's local memory + global memory;
    other methods: one view) over the test tasks; finished episodes are kept on resume.
    ``protocol.repetitions`` x ``protocol.runs`` runs in all (run r is in repetition
    r // runs)."""
    memory, store = parts.memory, parts.store
    tasks = cap_tasks(parts.env.tasks(cfg.protocol.eval_split), cfg.protocol.max_eval_tasks)
    if not tasks:
        raise ConfigError(
            f"env={parts.env.name} has no tasks in split {cfg.protocol.eval_split!r} "
            "(protocol.eval_split / protocol.max_eval_tasks)"
        )
    per_rep = int(cfg.protocol.runs)
    n_runs = per_rep * int(cfg.protocol.get("repetitions", 1) or 1)
    memory.begin_phase("eval")
    views = memory.eval_views()
    wanted = {(v, run, t.id) for v in views for run in range(n_runs) for t in tasks}
    existing = [r for r in store.read(files.EPISODES) if _key(r) in wanted]
    learning = memory.learns and not memory.frozen
    retries = store.read(files.REFLECTIONS) if learning else []
    for view in views:
        memory.set_view(view)
        for run in range(n_runs):
            done_here = [r for r in existing if r.get("agent") == view and r["run"] == run]
            done_ids = {r["task_id"] for r in done_here}
            remaining = [t for t in tasks if t.id not in done_ids]
            runner = EpisodeRunner(
                parts.env, parts.backbone, memory, parts.settings, phase="eval", run=run
            )
            log.info(
                "evaluation run %d%s: %d tasks (%d already done)",
                run,
                f" (agent {view})" if view is not None else "",
                len(tasks),
                len(done_ids),
            )
            start = _start_snapshot(parts, cfg) if learning else None
            if start is not None:  # every learning run starts from the acquired memory
                memory.load(start)
            before = memory.own_tokens()  # after the load, which resets the method's counters
            if learning:
                online = _Learning(parts, run, view, run // per_rep)
                mine = [r for r in retries if r.get("agent") == view and r["run"] == run]
                online.replay(done_here, mine)
                online.episodes(runner, remaining)
            else:
                runner.run(
                    remaining,
                    on_finish=lambda r, run=run, view=view: store.append(
                        files.EPISODES,
                        _record(r, run, agent=view, repetition=run // per_rep),
                    ),
                )
            parts.eval_memory_tokens += memory.own_tokens() - before
    memory.set_view(None)
    return [r for r in store.read(files.EPISODES) if _key(r) in wanted]


def acquisition_cost(
    records: Sequence[dict[str, Any]], memory_metrics: dict[str, Any]
) -> dict[str, Any]:
    """What building the memory cost, per train task: the agent's requests (one per step) and
    tokens from ``acquisition.jsonl``, plus the method's own LLM requests and tokens when it
    reports them (``acquisition_memory_requests`` / ``acquisition_memory_tokens``)."""
    if not records:
        return {}
    tasks = len({r["task_id"] for r in records})
    agent_requests = sum(int(r["steps"]) for r in records)
    agent_tokens = sum(int(r.get("tokens") or 0) for r in records)
    memory_requests = int(memory_metrics.get("acquisition_memory_requests") or 0)
    memory_tokens = int(memory_metrics.get("acquisition_memory_tokens") or 0)
    return {
        "acquisition_tasks": tasks,
        "acquisition_episodes": len(records),
        "acquisition_agent_requests": agent_requests,
        "acquisition_agent_tokens": agent_tokens,
        "acquisition_llm_calls_per_task": (agent_requests + memory_requests) / tasks,
        "acquisition_tokens_per_task": (agent_tokens + memory_tokens) / tasks,
    }


def _usage_dict(backbone: Backbone | None) -> dict[str, Any] | None:
    if backbone is None:
        return None
    return {"name": backbone.name, "is_llm": backbone.is_llm, **backbone.usage.to_dict()}


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run one (experiment, env, method, backbone, seed) cell and return its metrics."""
    t0 = time.perf_counter()
    caps = (cfg.protocol.max_train_tasks, cfg.protocol.max_eval_tasks)
    if caps != (None, None):
        log.warning(
            "experiment=%s caps tasks (max_train_tasks=%s, max_eval_tasks=%s); "
            "choose a paper experiment or experiment=null for full runs",
            cfg.experiment_name,
            *caps,
        )
    parts = build(cfg)
    logger = build_part(cfg.logger)
    policy: Backbone = parts.backbone
    try:
        if parts.memory.acquisition_policy == "expert":
            from memarena.llm.scripted import ScriptedBackbone

            policy = ScriptedBackbone(epsilon=0.0, seed=cfg.seed, name="scripted-expert-eps0")
        acquire(parts, cfg, policy)
        if cfg.protocol.freeze_during_eval:
            parts.memory.freeze()
        records = evaluate(parts, cfg)
        memory_llm = parts.services.llm_if_built
        # the method's own LLM tokens during evaluation, counted by the method (a backbone's
        # usage delta would double-count the agent's tokens when the two share a backbone)
        metrics = compute_metrics(
            records,
            memory_tokens=parts.eval_memory_tokens,
            runs_per_repetition=int(cfg.protocol.runs),
        )
        metrics.update(parts.memory.metrics())
        metrics.update(acquisition_cost(parts.store.read(files.ACQUISITION), metrics))
        metrics.update(
            experiment=cfg.experiment_name,
            env=cfg.env.name,
            method=cfg.method.name,
            ablation=cfg.ablation.get("name"),
            backbone=cfg.backbone.name,
            backbone_is_llm=parts.backbone.is_llm,
            seed=cfg.seed,
            wall_s=round(time.perf_counter() - t0, 2),
        )
        parts.store.write_json(files.METRICS, metrics)
        shared_llm = memory_llm is parts.backbone
        parts.store.write_json(
            files.USAGE,
            {
                "agent": _usage_dict(parts.backbone),
                "memory": "same as agent" if shared_llm else _usage_dict(memory_llm),
                "acquisition_policy": _usage_dict(policy)
                if policy is not parts.backbone
                else "agent",
                "note": "token counts cover this process; per-episode tokens are in episodes.jsonl",
            },
        )
        group = "/".join([cfg.experiment_name, cfg.env.name, cfg.method.name, cfg.backbone.name])
        logger.start(
            parts.store.dir,
            name=f"{group}/seed{cfg.seed}",
            group=group,
            config=OmegaConf.to_container(cfg, resolve=True),
            job_type=cfg.method.name,
        )
        logger.log_metrics(metrics)
        logger.log_episodes(
            [{k: v for k, v in r.items() if k not in ("trajectory", "outcome")} for r in records]
        )
        log.info("results in %s", parts.store.dir)
        return metrics
    finally:
        logger.finish()
        _close_all(parts, policy)


def _close_all(parts: Parts, policy: Backbone) -> None:
    closing = [parts.env.close, parts.backbone.close]
    memory_llm = parts.services.llm_if_built
    if memory_llm is not None and memory_llm is not parts.backbone:
        closing.append(memory_llm.close)
    if policy is not parts.backbone:
        closing.append(policy.close)
    for close in closing:
        try:
            close()
        except Exception as exc:
            log.warning("closing failed: %s", exc)
