"""Metrics of one run, computed from its evaluated episode records (``episodes.jsonl`` lines).

Every number here is a function of the records alone, so a resumed run's metrics equal an
uninterrupted run's. One record counts per episode (agent, run, task): when a key appears more
than once (a retried error episode, a redone part-written chunk, or two processes that wrote
into one folder before the run lock existed), the last one written counts and the others are
reported as ``retried_records`` (the superseded copy ended with status error) or
``duplicate_records`` (anything else); they are never counted twice. Sums do not follow file
order: the counted records are taken in (task id, run, agent) order and float sums use
``math.fsum``, so a run extended or resumed in another order has bit-identical metrics.

Definitions (every evaluated episode counts, errors included, as a failure):

- ``success_rate``: successful episodes / episodes; ``success_rate_ci95``: its 95% Wilson score
  interval ``[low, high]`` with the task as the unit (``n_tasks`` units, each counted once with
  its mean success over the agent views, runs and repetitions that played it:
  :func:`~memarena.results.stats.wilson_ci_over_units`); MemCo's 4 views of 2 tasks are 2
  samples, not 8. ``n_tasks``: distinct test tasks; ``n_episodes``: evaluated episodes;
- ``progress_rate``: mean progress in [0, 1]; ``avg_steps``: mean steps;
- ``n_errors`` / ``error_rate``: episodes with status ``error``;
- ``tokens_per_task``: (agent tokens of all episodes + ``memory_tokens``) / episodes, where
  ``memory_tokens`` are the memory method's own LLM tokens during evaluation (its retrievals,
  and the updates of a memory that keeps learning): ``memory_cost`` / ``update_cost`` of the
  records;
- ``retrieval_calls``: memory retrievals made for the episodes (one per episode, or per step
  for step-granularity methods); ``avg_mem_entries`` / ``mem_words_per_call``: entries and
  words of memory shown per retrieval (MemCo's memory-cost figure);
- ``eval_memory_usage`` / ``eval_memory_fallbacks``: the memory LLM's usage per purpose and
  its malformed answers by kind during evaluation;
- ``invalid_reply_rate``: the agent's replies it could not act on / steps (see
  ``EpisodeRecord.invalid_replies``);
- ``replies_at_cap``: the agent's free-text replies whose length reached the reply cap
  (cut by it, e.g. a thinking model's reasoning; the runner's ``details["replies_at_cap"]``
  of each episode, 0 for a non-LLM agent), and ``replies_at_cap_rate`` = that / steps;
- ``prompt_truncated`` / ``reply_shortened``: the agent's requests whose prompt the backbone
  cut on the left, or sent whole with a lower reply cap, to fit the model's context
  (``backbone.prompt_overflow``; the runner's ``details`` of each episode), and
  ``prompt_too_long``: episodes that ended because the agent's prompt did not fit at all
  (status ``prompt_too_long``; :mod:`memarena.llm.context_fit`);
- ``helper_turns``: steps whose action the released agent loop's stuck-solver helper chose
  (``protocol.agent_loop`` gmemory_autogen / memco_autogen; 0 otherwise), and
  ``helper_turns_per_episode``;
- ``runs``: number of evaluation runs k per repetition; when k > 1, ``avg_at_k`` = mean over
  the k runs of each run's success rate and ``pass_at_k`` = fraction of tasks that succeeded in
  at least one run (ReMe's Avg@k and Pass@k);
- ``repetitions``: R groups of k runs (``protocol.repetitions``; run r belongs to repetition
  r // k). ``avg_at_k`` / ``pass_at_k`` are then the means over the repetitions,
  ``avg_at_k_std`` / ``pass_at_k_std`` their population standard deviations (0 when R = 1)
  and ``at_k_repetitions`` the values of each repetition (ReMe: mean ± std over 3);
- ``per_domain``: ``{domain: {success_rate, progress_rate, n_episodes}}``;
- ``per_split``: the same plus ``avg_steps`` per task split when the test set merges several
  (ALFWorld: ``valid_seen`` = familiar, ``valid_unseen`` = held-out layouts);
- ``per_agent``: the same per evaluation view (MemCo: each source-domain agent with its own
  local memory and the shared global memory); the top-level values pool all agents.

:func:`behaviour_fingerprint` (``metrics.json`` ``run_fingerprint``, written by the pipeline)
is a digest of what the run did and remembered: every counted episode's outcome, memory ids,
actions, replies and observations, and the memory snapshots. Two seeds of one cell with equal
fingerprints are one run repeated (a greedy agent over a memory that draws nothing), and the
tables say so instead of printing "± 0.0".
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from memarena.core.costs import add_into, tokens
from memarena.results.records import EpisodeRecord, as_records
from memarena.results.stats import wilson_ci_over_units

log = logging.getLogger(__name__)


def _rates(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    n = len(records)
    return {
        "success_rate": sum(bool(r.success) for r in records) / n,
        "progress_rate": math.fsum(float(r.progress) for r in records) / n,
        "n_episodes": n,
    }


def _order(r: EpisodeRecord) -> tuple[str, int, str]:
    """The order sums take the records in: task id, run, agent."""
    return str(r.task_id), int(r.run or 0), str(r.agent or "")


def compute_metrics(
    records: Sequence[EpisodeRecord | Mapping[str, Any]],
    *,
    runs_per_repetition: int | None = None,
) -> dict:
    """Metrics of one run from its episode records (see the module docstring); JSON objects
    are read as :class:`~memarena.results.records.EpisodeRecord`."""
    if not records:
        raise ValueError(
            "compute_metrics: no episode records. The evaluation produced no episodes: check "
            "that the test split has tasks (protocol / env settings) and that episodes.jsonl "
            "is not empty."
        )
    try:
        written = as_records(list(records))
    except ValueError as err:
        raise ValueError(f"compute_metrics: {err}") from None
    # the last record of each episode, in a fixed order (not the file's)
    recs = sorted({r.key: r for r in written}.values(), key=_order)
    kept = {id(r) for r in recs}
    superseded = [r for r in written if id(r) not in kept]

    n = len(recs)
    n_errors = sum(r.status == "error" for r in recs)
    low, high = task_interval(recs)
    out: dict[str, Any] = {
        **_rates(recs),
        "success_rate_ci95": [low, high],
        "avg_steps": sum(int(r.steps) for r in recs) / n,
        "n_tasks": len({r.task_id for r in recs}),
        "n_errors": n_errors,
        "error_rate": n_errors / n,
        "retried_records": sum(r.status == "error" for r in superseded),
        "duplicate_records": sum(r.status != "error" for r in superseded),
        "invalid_reply_rate": sum(r.invalid_replies for r in recs)
        / max(sum(int(r.steps) for r in recs), 1),
        "replies_at_cap": sum(int((r.details or {}).get("replies_at_cap", 0)) for r in recs),
    }
    out["replies_at_cap_rate"] = out["replies_at_cap"] / max(sum(int(r.steps) for r in recs), 1)
    out.update(prompt_fit_counts(recs))
    # the released agent loop's stuck-solver helper (protocol.agent_loop): steps it chose
    out["helper_turns"] = sum(int(r.helper_turns) for r in recs)
    out["helper_turns_per_episode"] = out["helper_turns"] / n
    out.update(memory_costs(recs, written))
    out["tokens_per_task"] = (sum(int(r.tokens) for r in recs) + out["memory_tokens"]) / n

    out.update(_repetitions(recs, runs_per_repetition))

    by_domain: dict[str, list] = defaultdict(list)
    for r in recs:
        by_domain[str(r.domain or "all")].append(r)
    out["per_domain"] = {d: _rates(rs) for d, rs in sorted(by_domain.items())}
    for key, name in (("split", "per_split"), ("agent", "per_agent")):
        groups: dict[str, list] = defaultdict(list)
        for r in recs:
            value = getattr(r, key)
            if value is not None and value != "":
                groups[str(value)].append(r)
        if len(groups) > 1 or (key == "agent" and groups):
            out[name] = {g: _group(rs) for g, rs in sorted(groups.items())}
    return out


def prompt_fit_counts(records: Sequence[EpisodeRecord]) -> dict[str, int]:
    """The agent's prompts fitted into the context (``prompt_truncated``, ``reply_shortened``
    requests) and the episodes refused for one (``prompt_too_long``)."""
    out = {
        kind: sum(int((r.details or {}).get(kind, 0)) for r in records)
        for kind in ("prompt_truncated", "reply_shortened")
    }
    out["prompt_too_long"] = sum(r.status == "prompt_too_long" for r in records)
    return out


def task_interval(records: Sequence[EpisodeRecord]) -> tuple[float, float]:
    """The 95% interval of the success rate over tasks: each task's mean success over its
    episodes (views, runs, repetitions), one unit per task, in task-id order."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        by_task[str(r.task_id)].append(bool(r.success))
    means = [sum(v) / len(v) for _, v in sorted(by_task.items())]
    return wilson_ci_over_units(means)


def behaviour_fingerprint(
    records: Sequence[EpisodeRecord | Mapping[str, Any]], memory: Sequence[str] = ()
) -> str:
    """sha256 of what a run did: per counted episode (in (task, run, agent) order) its task,
    run, agent, repetition, outcome, memory ids and every step's action, reply and observation;
    and ``memory``, the sha256 of each memory snapshot it acquired or ended with. Timings,
    token counts and the seed itself are left out: equal fingerprints mean identical runs."""
    recs = sorted({r.key: r for r in as_records(list(records))}.values(), key=_order)
    episodes = []
    for r in recs:
        steps = (r.trajectory or {}).get("steps") or []
        episodes.append([
            r.task_id, r.run, r.agent, r.repetition, bool(r.success), float(r.progress),
            int(r.steps), r.status, list(r.memory_ids),
            [[s.get("action"), s.get("raw_output"), s.get("observation")] for s in steps],
        ])  # fmt: skip
    blob = json.dumps({"episodes": episodes, "memory": list(memory)}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def memory_costs(
    records: Sequence[EpisodeRecord], written: Sequence[EpisodeRecord]
) -> dict[str, Any]:
    """The memory-cost keys (see the module docstring): the retrievals of ``records`` (one
    per episode) and, per update of a learning run, the ``update_cost`` written last among
    all ``written`` records (a retried chunk's update replaces the first one)."""
    calls = entries = words = 0
    spent: dict[str, Any] = {}
    for r in records:
        cost = r.memory_cost or {}
        calls += int(cost.get("calls", 0))
        entries += int(cost.get("entries", 0))
        words += int(cost.get("words", 0))
        add_into(spent, {"usage": cost.get("usage"), "fallbacks": cost.get("fallbacks")})
    updates = {(r.agent, r.run, r.update): r.update_cost for r in written if r.update_cost}
    for key in sorted(updates, key=lambda k: (str(k[0] or ""), int(k[1] or 0), k[2] or 0)):
        add_into(spent, updates[key])
    usage = spent.get("usage", {})
    return {
        "retrieval_calls": calls,
        "avg_mem_entries": entries / calls if calls else 0.0,
        "mem_words_per_call": words / calls if calls else 0.0,
        "memory_tokens": tokens(usage),
        "eval_memory_usage": usage,
        "eval_memory_fallbacks": spent.get("fallbacks", {}),
    }


def _group(records: list[EpisodeRecord]) -> dict[str, float]:
    """Rates and average steps of a group of episodes (one agent, one split)."""
    return {
        **_rates(records),
        "avg_steps": sum(int(r.steps) for r in records) / len(records),
        "n_episodes": len(records),
    }


def _repetitions(records: list[EpisodeRecord], per_rep: int | None) -> dict[str, Any]:
    """``runs``, ``repetitions`` and the Avg@k / Pass@k keys (see the module docstring)."""
    runs = sorted({int(r.run or 0) for r in records})
    k = int(per_rep) if per_rep else len(runs)
    if k < 1:
        raise ValueError(f"compute_metrics: runs_per_repetition must be >= 1, not {per_rep}")
    reps: dict[int, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        run = int(r.run or 0)
        reps[run // k][run].append(r)
    out: dict[str, Any] = {"runs": min(k, len(runs)), "repetitions": len(reps)}
    if len(runs) <= 1:
        return out
    values = [
        _at_k([r for rs in by_run.values() for r in rs], by_run)
        for by_run in (reps[i] for i in sorted(reps))
    ]
    for name in ("avg_at_k", "pass_at_k"):
        xs = [v[name] for v in values]
        mean = math.fsum(xs) / len(xs)
        out[name] = mean
        out[f"{name}_std"] = (math.fsum((x - mean) ** 2 for x in xs) / len(xs)) ** 0.5
    out["at_k_repetitions"] = values
    return out


def _at_k(records: list[EpisodeRecord], by_run: dict[int, list]) -> dict[str, float]:
    """ReMe's Avg@k (mean of the per-run success rates) and Pass@k (any run succeeded)."""
    k = len(by_run)
    avg_at_k = math.fsum(_rates(rs)["success_rate"] for rs in by_run.values()) / k
    any_success: dict[str, bool] = defaultdict(bool)
    for r in records:
        any_success[r.task_id] |= bool(r.success)
    tasks_per_run = {run: len({r.task_id for r in rs}) for run, rs in by_run.items()}
    if len(set(tasks_per_run.values())) != 1:
        log.warning(
            "runs have unequal task counts %s (an interrupted run?): Avg@%d and Pass@%d "
            "use the episodes present",
            tasks_per_run,
            k,
            k,
        )
    return {"avg_at_k": avg_at_k, "pass_at_k": sum(any_success.values()) / len(any_success)}


def flatten(d: Mapping[str, Any], prefix: str = "", sep: str = "/") -> dict[str, Any]:
    """Flatten nested dicts (and lists, by index) into ``{"a/b/0": value}``.

    ``{"per_domain": {"pddl": {"success_rate": 0.5}}, "success_rate_ci95": [0.1, 0.9]}`` becomes
    ``{"per_domain/pddl/success_rate": 0.5, "success_rate_ci95/0": 0.1,
    "success_rate_ci95/1": 0.9}``.
    """
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, name, sep))
        elif isinstance(value, list | tuple):
            out.update(flatten({str(i): v for i, v in enumerate(value)}, name, sep))
        else:
            out[name] = value
    return out
