"""G-Memory's periodic insight maintenance, as the reference code runs it (``GMemory.py:
InsightsManager.finetune_insights`` / ``_finetune_insights`` / ``merge_insights``).

Fine-tuning (every ``rounds_per_insights`` stored tasks once ``start_insights_threshold`` are
stored), for each of ``insights_point_num`` tasks drawn at random (with replacement) from all
stored tasks, one after the other because each sees the previous one's changes:

1. its 3 nearest solved and 1 nearest failed tasks by cosine (which include the task itself),
   then the task itself appended once more to its own list, as the reference does;
2. the insights supported by at least half of those tasks (repeats count) are the rules shown,
   and only they can be named by AGREE / EDIT / REMOVE;
3. one comparative call per (solved, failed) pair in order and one success call per chunk of at
   most 5 solved tasks (shuffled), each returning ADD / EDIT / AGREE / REMOVE operations; a
   note against ADD is added once more than 10 insights exist;
4. the operations of each call are applied in call order with that call's tasks as support,
   then insights at score <= 0 are removed.

The calls of one drawn task are built from the same state and sent as ONE batch: in the
reference a later call of the same task sees an earlier call's EDIT wording, here it sees the
wording from before the task (operations still apply in the reference's order).

Merge (every ``merge_every`` tasks): the stored tasks are clustered (:func:`finch_labels`);
for each cluster the insights its tasks support are merged by the LLM in batches of 10 (all
batches in one call), and the whole list is replaced by the merged insights, each at score 2 and
supported by every task of its cluster. The reference asks for at most
``(len(batch) // 3) // 3`` insights per batch, which is 0 below 9 insights; memarena asks for at
most ``max(1, len(batch) // 3)``. A malformed merge answer keeps its batch's insights as they
were (counted fallback) instead of dropping them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

from memarena.core import Backbone, ChatRequest
from memarena.core.json_budget import reply_tokens
from memarena.memory.gmemory import prompts
from memarena.memory.gmemory.cluster import finch_labels
from memarena.memory.gmemory.insights import (
    FALLBACK_INSIGHTS,
    MAX_RULES,
    InsightGraph,
    parse_merge,
    parse_ops,
)
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryGraph
from memarena.memory.gmemory.render import (
    render_failed,
    render_key_steps,
    render_rules,
    render_solved,
)
from memarena.memory.llm_calls import json_batch

SIMILAR_SUCCESSES, SIMILAR_FAILURES = 3, 1  # finetune_insights: SUCCESS_TASK_NUM, FAIL_TASK_NUM
CHUNK_SIZE = 5  # _finetune_insights: random_divide_list(successes, 5)
MERGE_BATCH = 10  # _merge_rules: batch_size


def sample_points(query_ids: Sequence[str], n: int, rng: random.Random) -> list[str]:
    """``n`` draws with replacement (``random.choice`` per point in the reference)."""
    return [rng.choice(list(query_ids)) for _ in range(n)] if query_ids else []


def similar_tasks(queries: QueryGraph, query_id: str) -> tuple[list[str], list[str]]:
    """Step 1: (solved, failed) task ids for one drawn task."""
    embedding = queries.embeddings[queries.row[query_id]]
    successes = queries.nearest(embedding, SIMILAR_SUCCESSES, RESOLVED)
    failures = queries.nearest(embedding, SIMILAR_FAILURES, FAILED)
    (successes if queries.nodes[query_id].resolved else failures).append(query_id)
    return successes, failures


def divide(items: Sequence[str], size: int, rng: random.Random) -> list[list[str]]:
    """Shuffled, then cut into equal chunks of at most ``size`` (``random_divide_list``)."""
    items = list(items)
    if not items:
        return []
    rng.shuffle(items)
    n_chunks = math.ceil(len(items) / size)
    step = math.ceil(len(items) / n_chunks)
    return [items[i : i + step] for i in range(0, len(items), step)]


def _request(
    system: str, user: str, schema: dict[str, Any], cap: int | None, temperature: float = 0.0
) -> ChatRequest:
    """A JSON request whose ``max_tokens`` is the longest valid answer of ``schema``, or
    ``cap`` when smaller (:func:`memarena.core.json_budget.reply_tokens`), sampled at
    ``temperature``."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return ChatRequest(
        messages=messages,
        json_schema=schema,
        max_tokens=reply_tokens(schema, cap),
        temperature=float(temperature),
    )


def _ops_request(
    system: str, user: str, cap: int | None = None, temperature: float = 0.0
) -> ChatRequest:
    return _request(system, user, prompts.OPS_SCHEMA, cap, temperature)


def point_calls(
    queries: QueryGraph,
    insights: InsightGraph,
    query_id: str,
    rng: random.Random,
    cap: int | None = None,
    temperature: float = 0.0,
) -> tuple[list[tuple[ChatRequest, list[str]]], set[str]]:
    """Steps 1-3 for one drawn task: ``(request, the tasks it was written from)`` per call, and
    the ids of the rules shown."""
    successes, failures = similar_tasks(queries, query_id)
    tasks = successes + failures
    shown = insights.related(tasks, threshold=len(tasks) / 2)
    rules = render_rules([(i.id, i.content) for i in shown])
    common = {"rules": rules, "max_ops": prompts.MAX_OPS}
    common["full"] = prompts.FULL_RULES_NOTE if len(insights) > MAX_RULES else ""
    nodes = queries.nodes
    calls = []
    for s, f in zip(successes, failures, strict=False):
        user = prompts.COMPARE_USER.format(
            success=render_solved(nodes[s]),
            reason=nodes[f].fail_reason or "(not known)",
            failure=render_failed(nodes[f]),
            **common,
        )
        calls.append((_ops_request(prompts.COMPARE_SYSTEM, user, cap, temperature), [s, f]))
    for chunk in divide(successes, CHUNK_SIZE, rng):
        history = "\n\n".join(render_key_steps(nodes[q]) for q in chunk)
        user = prompts.SUCCESS_USER.format(successes=history, **common)
        calls.append((_ops_request(prompts.SUCCESS_SYSTEM, user, cap, temperature), chunk))
    return calls, {i.id for i in shown}


def finetune_point(
    llm: Backbone,
    queries: QueryGraph,
    insights: InsightGraph,
    query_id: str,
    rng: random.Random,
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
    cap: int | None = None,
    temperature: float = 0.0,
) -> dict[str, int]:
    """Steps 1-3 and the operations of step 4 for one drawn task (one batched call); returns
    operation counts (:func:`finetune` removes the insights at score <= 0)."""
    calls, shown = point_calls(queries, insights, query_id, rng, cap, temperature)
    requests = [request for request, _ in calls]
    answers = json_batch(llm, requests, usage=usage, fallbacks=fallbacks, kind=FALLBACK_INSIGHTS)
    counts: dict[str, int] = {}
    for (_, tasks), answer in zip(calls, answers, strict=True):
        applied = insights.apply(parse_ops(llm, answer, shown, fallbacks), tasks)
        for kind, n in applied.items():
            counts[kind] = counts.get(kind, 0) + n
    return counts


def finetune(
    insights: InsightGraph,
    points: Sequence[str],
    propose: Callable[[str], dict[str, int]],
) -> dict[str, int]:
    """Run ``propose`` (one drawn task's operations, e.g. :func:`finetune_point`) for each
    drawn task in order, removing the insights at score <= 0 after each; returns the summed
    counts (``deleted``: insights removed)."""
    counts: dict[str, int] = {"deleted": 0}
    for query_id in points:
        for kind, n in propose(query_id).items():
            counts[kind] = counts.get(kind, 0) + n
        counts["deleted"] += insights.clear()
    return counts


# -- merge -----------------------------------------------------------------------------------
def task_clusters(queries: QueryGraph) -> list[list[str]]:
    """Stored task ids grouped by :func:`finch_labels`, clusters by first member."""
    groups: dict[int, list[str]] = {}
    for query_id, label in zip(queries.ids, finch_labels(queries.embeddings), strict=True):
        groups.setdefault(int(label), []).append(query_id)
    return list(groups.values())


def merge_limit(batch: Sequence[str]) -> int:
    return max(1, len(batch) // 3)


def merge_request(
    batch: Sequence[str], cap: int | None = None, temperature: float = 0.0
) -> ChatRequest:
    user = prompts.MERGE_USER.format(
        insights="\n".join(f"- {rule}" for rule in batch), limit=merge_limit(batch)
    )
    schema = prompts.merge_schema(merge_limit(batch))
    return _request(prompts.MERGE_SYSTEM, user, schema, cap, temperature)


def merge(
    llm: Backbone,
    queries: QueryGraph,
    insights: InsightGraph,
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
    cap: int | None = None,
    temperature: float = 0.0,
) -> int:
    """Replace the insights by their per-cluster merge (one batched call); returns the change
    in the number of insights (before - after)."""
    if not len(insights):
        return 0
    jobs: list[tuple[list[str], list[str]]] = []  # (cluster's tasks, rules of one batch)
    for members in task_clusters(queries):
        rules = [i.content for i in insights.related(members)]
        jobs += [(members, rules[b : b + MERGE_BATCH]) for b in range(0, len(rules), MERGE_BATCH)]
    requests = [merge_request(batch, cap, temperature) for _, batch in jobs]
    answers = json_batch(llm, requests, usage=usage, fallbacks=fallbacks, kind=FALLBACK_INSIGHTS)
    merged = [
        (content, members)
        for (members, batch), answer in zip(jobs, answers, strict=True)
        for content in parse_merge(llm, answer, batch, merge_limit(batch), fallbacks)
    ]
    before = len(insights)
    insights.replace(merged)
    return before - len(insights)
