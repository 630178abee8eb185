"""Stage 3: metrics, usage and the logger, from the records on disk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from memarena.agent import LLMPolicy, Policy
from memarena.pipeline.build import Parts
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.records import EpisodeRecord


def acquisition_cost(
    records: Sequence[EpisodeRecord], memory_metrics: dict[str, Any]
) -> dict[str, Any]:
    """What building the memory cost, per train task: the agent's requests (one per step) and
    tokens from ``acquisition.jsonl``, plus the method's own LLM requests and tokens when it
    reports them (``acquisition_memory_requests`` / ``acquisition_memory_tokens``)."""
    if not records:
        return {}
    tasks = len({r.task_id for r in records})
    agent_requests = sum(int(r.steps) for r in records)
    agent_tokens = sum(int(r.tokens or 0) for r in records)
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


def metrics_of(parts: Parts, cfg: DictConfig, records: list[EpisodeRecord], wall_s: float):
    """``metrics.json``: the episode metrics, the method's own numbers, the acquisition cost
    and what the run was."""
    metrics = compute_metrics(
        records,
        memory_tokens=parts.eval_memory_tokens,
        runs_per_repetition=parts.protocol.runs,
    )
    metrics.update(parts.memory.metrics())
    acquisition = list(_last_samples(parts.store.read_records(files.ACQUISITION)))
    metrics.update(acquisition_cost(acquisition, metrics))
    metrics.update(
        experiment=cfg.experiment_name,
        env=cfg.env.name,
        method=cfg.method.name,
        ablation=cfg.ablation.get("name"),
        backbone=cfg.backbone.name,
        backbone_is_llm=parts.policy.is_llm,
        seed=cfg.seed,
        update_every=parts.protocol.update_every,
        report=report_of(cfg),
        wall_s=round(wall_s, 2),
    )
    return metrics


def report_of(cfg: DictConfig) -> dict[str, Any]:
    """The paper tables / figures the run's config declares it belongs to (``report``)."""
    node = cfg.get("report") or {}
    return {"paper": node.get("paper"), "tables": [str(t) for t in node.get("tables") or []]}


def _last_samples(records: list[EpisodeRecord]):
    """One acquisition record per (task, sample): the last written."""
    out: dict[tuple[str, int], EpisodeRecord] = {}
    for rec in records:
        out[(rec.task_id, rec.run)] = rec
    return out.values()


def usage_of(parts: Parts, acting: Policy) -> dict[str, Any]:
    """``usage.json``: calls, tokens, cache hits and fallbacks of the agent, the memory LLM and
    the policy that acted during acquisition when it was another (ICL's expert)."""
    memory_llm = parts.services.llm_if_built
    agent_llm = parts.policy.backbone if isinstance(parts.policy, LLMPolicy) else None
    if memory_llm is None:
        memory: Any = None
    elif memory_llm is agent_llm:
        memory = "same as agent"
    else:
        memory = {"name": memory_llm.name, "is_llm": True, **memory_llm.usage.to_dict()}
    return {
        "agent": _policy_usage(parts.policy),
        "memory": memory,
        "acquisition_policy": _policy_usage(acting) if acting is not parts.policy else "agent",
        "note": "token counts cover this process; per-episode tokens are in episodes.jsonl",
    }


def _policy_usage(policy: Policy) -> dict[str, Any]:
    return {"name": policy.name, "is_llm": policy.is_llm, **policy.usage.to_dict()}
