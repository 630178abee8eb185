"""acquisition -> memory snapshot -> evaluation -> metrics, for any method x env x backbone.

The pipeline builds the parts from the config with ``hydra.utils.instantiate`` and never
branches on method or env names. It is resumable: every finished episode is appended to disk
as it ends, and a rerun with the same run directory continues where the last one stopped.

- Acquisition runs the train tasks in waves of ``protocol.concurrency`` episodes; after each
  wave the memory observes the wave's trajectories in task order and the records are appended
  to ``acquisition.jsonl`` (with the full trajectory). On resume those trajectories are
  observed again in file order, which rebuilds the memory without rerunning any episode
  (LLM-side memory calls are served by the call cache).
- The snapshot is written to ``memory/`` and marked complete; a later resume loads it.
- Evaluation with a frozen memory keeps ``concurrency`` episodes in flight and appends each
  episode to ``episodes.jsonl`` as it ends. With ``freeze_during_eval=false`` (dynamic
  variants) it runs in waves like acquisition, and every run starts from the snapshot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from memarena.agent import EpisodeResult, EpisodeRunner, RunnerSettings
from memarena.core import Backbone, ConfigError, Env, MemarenaError, Outcome, Task, Trajectory
from memarena.memory.base import BaseMemory, MemoryServices
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.store import RunStore, run_dir_for

log = logging.getLogger(__name__)


@dataclass
class Parts:
    env: Env
    backbone: Backbone
    memory: BaseMemory
    services: MemoryServices
    settings: RunnerSettings
    store: RunStore


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
        max_tokens=cfg.protocol.max_tokens,
        seed=cfg.seed,
    )
    return Parts(env, backbone, memory, services, settings, store)


# --------------------------------------------------------------------------------------------
# records


def _record(
    result: EpisodeResult, run: int, *, agent: str | None = None, with_trajectory: bool = True
) -> dict[str, Any]:
    task, out = result.trajectory.task, result.outcome
    rec: dict[str, Any] = {
        "task_id": task.id,
        "split": task.split,
        "domain": task.domain,
        "run": run,
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


def _replay(memory: BaseMemory, records: Sequence[dict[str, Any]]) -> None:
    for rec in records:
        memory.observe(Trajectory.from_dict(rec["trajectory"]), Outcome(**rec["outcome"]))


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
# phases


def _learning_runs(
    parts: Parts,
    runner: EpisodeRunner,
    tasks: list[Task],
    file: str,
    run: int,
    agent: str | None = None,
) -> None:
    """Waves of episodes; the memory observes each wave in task order before the next."""
    for wave in _waves(tasks, parts.settings.concurrency):
        for result in runner.run(wave):
            parts.memory.observe(result.trajectory, result.outcome)
            parts.store.append(file, _record(result, run, agent=agent))


def acquire(parts: Parts, cfg: DictConfig, policy: Backbone) -> None:
    memory, store = parts.memory, parts.store
    if not memory.learns:
        return
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
    done = store.read(files.ACQUISITION)
    _replay(memory, done)
    done_ids = {rec["task_id"] for rec in done}
    remaining = [t for t in tasks if t.id not in done_ids]
    log.info(
        "acquisition: %d train tasks (%d already done)", len(tasks), len(tasks) - len(remaining)
    )
    runner = EpisodeRunner(parts.env, policy, memory, parts.settings, phase="acquire")
    _learning_runs(parts, runner, remaining, files.ACQUISITION, run=0)
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


def _key(rec: dict[str, Any]) -> tuple[Any, int, str]:
    return rec.get("agent"), rec["run"], rec["task_id"]


def evaluate(parts: Parts, cfg: DictConfig) -> list[dict[str, Any]]:
    """Every run of every evaluation view (MemCo: each agent's local memory + global memory;
    other methods: one view) over the test tasks; finished episodes are kept on resume."""
    memory, store = parts.memory, parts.store
    tasks = cap_tasks(parts.env.tasks(cfg.protocol.eval_split), cfg.protocol.max_eval_tasks)
    if not tasks:
        raise ConfigError(
            f"env={parts.env.name} has no tasks in split {cfg.protocol.eval_split!r} "
            "(protocol.eval_split / protocol.max_eval_tasks)"
        )
    views = memory.eval_views()
    wanted = {(v, run, t.id) for v in views for run in range(cfg.protocol.runs) for t in tasks}
    existing = [r for r in store.read(files.EPISODES) if _key(r) in wanted]
    learning = memory.learns and not memory.frozen
    for view in views:
        memory.set_view(view)
        for run in range(cfg.protocol.runs):
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
            if learning:
                if store.snapshot_complete():
                    memory.load(store.memory_dir)
                _replay(memory, done_here)
                _learning_runs(parts, runner, remaining, files.EPISODES, run, view)
            else:
                runner.run(
                    remaining,
                    on_finish=lambda r, run=run, view=view: store.append(
                        files.EPISODES, _record(r, run, agent=view)
                    ),
                )
    memory.set_view(None)
    return [r for r in store.read(files.EPISODES) if _key(r) in wanted]


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
        before = parts.memory.own_tokens()
        records = evaluate(parts, cfg)
        memory_llm = parts.services.llm_if_built
        # the method's own LLM tokens during evaluation, counted by the method (a backbone's
        # usage delta would double-count the agent's tokens when the two share a backbone)
        after = parts.memory.own_tokens()
        metrics = compute_metrics(records, memory_tokens=after - before)
        metrics.update(parts.memory.metrics())
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
