"""Stage 3: metrics and usage, from the records on disk.

``metrics.json`` is a function of what is on disk (the episode records, the snapshot's
completion marker, the memory the records rebuild), so a resumed run's equals an
uninterrupted run's, key for key; times and process counters go to ``run_info.json`` and
``usage.json``. It also says what the run was, so a smoke run never passes for a paper cell:
``n_tasks``, and ``flags`` naming a ``capped`` task list, a ``short_split`` (a FEVER / HotpotQA
split whose file holds fewer records than ``env.num_<split>`` asks), ``stand_in_data`` (the
env's embedded stand-in, not the benchmark's official data), a ``non_llm_backbone`` (the
scripted expert), a ``not_paper_backbone`` (an LLM that is not one of ``report.backbones``,
those the run's paper tables were reported with), a ``degenerate_memory`` (a learning memory
that holds nothing, or whose LLM answers mostly fell back) and a ``train_test_overlap`` (a
memory learnt on tasks whose id or goal is a test task's: MemCo's PDDL lists,
``env.train_source=problems``; how many test tasks: ``train_test_overlap_tasks``), ``errors``
(episodes that ended with status error: ``n_errors`` in evaluation, ``acquisition_errors`` while
acquiring) and ``timeouts`` (episodes cut by ``protocol.episode_timeout_s``: ``n_timeouts``),
``prompt_truncated`` (an agent prompt, in evaluation or acquisition, whose head the backbone cut
to fit the context: ``backbone.prompt_overflow=cut_left``) and ``prompt_too_long`` (episodes
ended because the agent's prompt did not fit the context), ``invalid_replies`` (more than half
the agent's replies could not be acted on: ``invalid_reply_rate``) and ``code_changed`` (resumed
on other code with ``protocol.allow_code_change``, recorded in ``run_info.json``).
``run_fingerprint`` digests what the run did and remembered
(:func:`memarena.results.metrics.behaviour_fingerprint`): seeds with equal fingerprints are one
run repeated.

:func:`check_errors` ends a run whose episodes ended with an error above
``protocol.max_error_rate`` (or all of them) with :class:`TooManyErrors`, once its records (and,
for evaluation, ``metrics.json``) are written: a dead server never looks like a result.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from memarena.agent import LLMPolicy, Policy
from memarena.core import MemarenaError
from memarena.core.costs import add_into, requests, tokens
from memarena.core.settings import readings_of
from memarena.pipeline.build import Parts
from memarena.pipeline.tasks import cap_tasks
from memarena.results import store as files
from memarena.results.collect import backbone_key
from memarena.results.metrics import behaviour_fingerprint, compute_metrics, prompt_fit_counts
from memarena.results.records import EpisodeRecord, latest

# a learning memory whose LLM answers fell back more often than this is flagged degenerate
DEGENERATE_FALLBACK_RATE = 0.5
# a run whose agent replies could not be acted on more often than this is flagged
INVALID_REPLY_RATE = 0.5


def acquisition_cost(
    records: Sequence[EpisodeRecord], memory_usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What building the memory cost, per train task: the agent's requests (one per step) and
    tokens from ``acquisition.jsonl`` (the last record of each sample), plus the method's own
    LLM requests and tokens (``memory_usage``, from the snapshot's marker)."""
    records = latest(records)
    if not records:
        return {}
    tasks = len({r.task_id for r in records})
    agent_requests = sum(int(r.steps) for r in records)
    agent_tokens = sum(int(r.tokens or 0) for r in records)
    memory_requests, memory_tokens = requests(memory_usage), tokens(memory_usage)
    return {
        "acquisition_tasks": tasks,
        "acquisition_episodes": len(records),
        "acquisition_errors": sum(r.status == "error" for r in records),
        "acquisition_agent_requests": agent_requests,
        "acquisition_agent_tokens": agent_tokens,
        "acquisition_memory_requests": memory_requests,
        "acquisition_memory_tokens": memory_tokens,
        "acquisition_llm_calls_per_task": (agent_requests + memory_requests) / tasks,
        "acquisition_tokens_per_task": (agent_tokens + memory_tokens) / tasks,
        **{f"acquisition_{k}": n for k, n in prompt_fit_counts(records).items()},
    }


def metrics_of(parts: Parts, cfg: DictConfig, records: list[EpisodeRecord]) -> dict[str, Any]:
    """``metrics.json``: the episode metrics, the memory's state and costs, the acquisition
    cost and what the run was (see the module docstring)."""
    memory = parts.memory
    metrics = compute_metrics(records, runs_per_repetition=parts.protocol.runs)
    metrics.update(parts.env.run_metrics(latest(records)))
    metrics.update(memory.metrics())
    # the method's settings as the run used them: every "official" reading resolved for its env
    metrics["method_settings"] = memory.settings.to_dict()
    # the source each reading follows (released / paper / memarena / <code>_released / other)
    metrics["readings"] = {**memory.readings, **readings_of(parts.protocol, "protocol")}
    metrics["memory_size"] = memory.size()
    if memory.learns:
        metrics["train_test_overlap_tasks"] = overlapping_tasks(parts)
    acquired = snapshot_info(parts)
    acquired_usage = acquired.get("memory_usage") or {}
    total = add_into({"usage": {}, "fallbacks": {}}, {"usage": acquired_usage})
    add_into(total, {"fallbacks": acquired.get("memory_fallbacks")})
    add_into(total, {"usage": metrics["eval_memory_usage"]})
    add_into(total, {"fallbacks": metrics["eval_memory_fallbacks"]})
    asked = requests(total["usage"])
    metrics.update(
        memory_token_usage=total["usage"],
        memory_fallbacks=dict(sorted(total["fallbacks"].items())),
        memory_fallback_rate=sum(total["fallbacks"].values()) / asked if asked else 0.0,
    )
    metrics.update(acquisition_cost(parts.store.read_records(files.ACQUISITION), acquired_usage))
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
        # what a seed varies for this method, as the experiment file states it (None: unstated)
        seed_varies=(cfg.get("seed_varies") or {}).get(cfg.method.name),
    )
    metrics["n_timeouts"] = sum(r.status == "timeout" for r in latest(records))
    metrics["flags"] = flags_of(parts, metrics, on_paper_backbone(cfg))
    metrics["run_fingerprint"] = behaviour_fingerprint(records, memory_digests(parts, acquired))
    return metrics


def memory_digests(parts: Parts, acquired: dict[str, Any]) -> list[str]:
    """The sha256 of each memory snapshot of the run: the one evaluation started from
    (acquired or ``snapshot_from``) and those a learning evaluation ended its runs with
    (``memory_final/``), in path order."""
    digests = [str(acquired["sha256"])] if acquired.get("sha256") else []
    final = parts.store.dir / files.FINAL_MEMORY_DIR
    for marker in sorted(final.rglob(files.SNAPSHOT_DONE)) if final.is_dir() else ():
        digests.append(f"{marker.parent.relative_to(final)}:{files.snapshot_sha256(marker.parent)}")
    return digests


def snapshot_info(parts: Parts) -> dict[str, Any]:
    """The completion marker of the snapshot evaluation started from ({} when none)."""
    folder = parts.snapshot_from or parts.store.memory_dir
    marker = folder / files.SNAPSHOT_DONE
    if not parts.memory.learns or not marker.is_file():
        return {}
    return json.loads(marker.read_text())


def flags_of(parts: Parts, metrics: dict[str, Any], paper_backbone: bool = True) -> list[str]:
    """What makes this run something other than a full paper cell (see the module
    docstring); tables and notebooks show them beside ``n_tasks``. ``paper_backbone``: the
    run's backbone is one its paper tables were reported with (:func:`on_paper_backbone`)."""
    protocol, env, out = parts.protocol, parts.env, []
    eval_cap, train_cap = protocol.max_eval_tasks, protocol.max_train_tasks
    # the train split only when the run used it: a memory that does not learn (method=none)
    # never asked for it, and an env may not have one (an AppWorld root with only test data)
    if (eval_cap is not None and eval_cap < len(env.tasks(protocol.eval_split))) or (
        train_cap and parts.memory.learns and train_cap < len(env.tasks(protocol.train_split))
    ):
        out.append("capped")
    short = getattr(env, "short_splits", None) or {}
    if protocol.eval_split in short or (parts.memory.learns and protocol.train_split in short):
        out.append("short_split")  # a split smaller than the env's num_<split> asks
    if getattr(env, "stand_in", False):
        out.append("stand_in_data")
    if not parts.policy.is_llm:
        out.append("non_llm_backbone")
    elif not paper_backbone:
        out.append("not_paper_backbone")
    if parts.memory.learns and (
        metrics.get("memory_size") == 0
        or (metrics.get("memory_size") is None and not metrics.get("avg_mem_entries"))
        or metrics["memory_fallback_rate"] > DEGENERATE_FALLBACK_RATE
    ):
        out.append("degenerate_memory")
    if parts.memory.name in (protocol.step_budget_by_method or {}):
        out.append("method_step_budget")
    if metrics.get("train_test_overlap_tasks"):
        out.append("train_test_overlap")
    if metrics.get("n_errors") or metrics.get("acquisition_errors"):
        out.append("errors")
    if metrics.get("n_timeouts"):
        out.append("timeouts")
    for kind in ("prompt_truncated", "prompt_too_long"):
        if metrics.get(kind) or metrics.get(f"acquisition_{kind}"):
            out.append(kind)
    if (metrics.get("invalid_reply_rate") or 0.0) > INVALID_REPLY_RATE:
        out.append("invalid_replies")
    if any(i.get("code_changed_from") for i in parts.store.invocations()):
        out.append("code_changed")
    return out


class TooManyErrors(MemarenaError):
    """Too many episodes of a run ended with status error (``protocol.max_error_rate``), or all
    of them; the records are on disk and a rerun retries those episodes."""


def check_errors(parts: Parts, records: Sequence[EpisodeRecord], stage: str) -> None:
    """Raise :class:`TooManyErrors` when every one of ``records`` (the last record of each
    episode of ``stage``: ``evaluation`` or ``acquisition``) ended with status error, or more
    than ``protocol.max_error_rate`` of them did. The message names the commonest error text
    (the server's message for a failed request)."""
    records = latest(records)
    failed = [r for r in records if r.status == "error"]
    limit = parts.protocol.max_error_rate
    if not failed:
        return
    everything = len(failed) == len(records)
    if not everything and (limit is None or len(failed) <= limit * len(records)):
        return
    (text, count), *_ = Counter(str(r.error or "no error text") for r in failed).most_common(1)
    why = (
        "all of them"
        if everything
        else f"over protocol.max_error_rate={limit} (set it higher, or null, to accept them)"
    )
    written = (
        f"records and metrics.json (flag `errors`) are in {parts.store.dir}"
        if stage == "evaluation"
        else f"records are in {parts.store.dir / files.ACQUISITION}; no memory snapshot was written"
    )
    raise TooManyErrors(
        f"memarena: {len(failed)} of {len(records)} {stage} episodes ended with an error, {why}. "
        f"The commonest error ({count} episode(s)): {text[:500]}. The {written}. Fix the cause "
        "(a server: start it, or fix backbone.base_url; a prompt over the model's context: "
        "lower protocol.history_steps or serve a longer context), then rerun the same command: "
        "the episodes that ended with an error run again (protocol.retry_errors)."
    )


def overlapping_tasks(parts: Parts) -> int:
    """How many test tasks of this run have the id or the goal (whitespace and case aside) of
    a train task the memory was acquired on."""
    protocol, env = parts.protocol, parts.env
    train = cap_tasks(env.tasks(protocol.train_split), protocol.max_train_tasks)
    test = cap_tasks(env.tasks(protocol.eval_split), protocol.max_eval_tasks)

    def goal(text: str) -> str:
        return " ".join(str(text).lower().split())

    ids, goals = {t.id for t in train}, {goal(t.goal) for t in train}
    return sum(t.id in ids or goal(t.goal) in goals for t in test)


def report_of(cfg: DictConfig) -> dict[str, Any]:
    """The paper tables / figures the run's config declares it belongs to (``report``), with
    the backbones the paper reports them with."""
    node = cfg.get("report") or {}
    return {
        "paper": node.get("paper"),
        "tables": [str(t) for t in node.get("tables") or []],
        "backbones": [str(b) for b in node.get("backbones") or []],
    }


def on_paper_backbone(cfg: DictConfig) -> bool:
    """True unless the run declares the backbones of its paper tables (``report.backbones``)
    and neither its backbone's name nor its model is one of them (a served model's name may
    carry a suffix: ``Qwen/Qwen2.5-7B-Instruct`` is ``qwen2.5-7b``)."""
    wanted = [backbone_key(b) for b in report_of(cfg)["backbones"]]
    if not wanted:
        return True
    names = [backbone_key(cfg.backbone.get(k)) for k in ("name", "model") if cfg.backbone.get(k)]
    return any(n.startswith(w) for n in names for w in wanted)


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
