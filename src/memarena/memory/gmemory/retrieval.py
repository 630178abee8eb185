"""G-Memory's retrieval for a new task, as the reference code does it (``GMemory.py:
GMemory.retrieve_memory`` / ``_retrieve_memory_raw`` / ``InsightsManager.
query_insights_with_score``).

Solved tasks to show (:func:`success_candidates`, then :func:`rerank`):

1. the solved tasks among the query-graph hits (top-k by cosine plus their hop neighbours);
2. when these are fewer than the candidate pool (twice the number shown: ``retrieve_memory``
   asks ``_retrieve_memory_raw`` for ``2 * successful_topk``), the pool's worth of solved tasks
   nearest by cosine instead;
3. sorted by cosine to the new task, those below the similarity threshold dropped, the pool
   kept;
4. the LLM scores each candidate's relevance from 1 to 10 (``generative_task_*`` prompts, one
   request per candidate, even a lone one, batched here) and the best-scored are shown (ties:
   cosine order).

Insights (:func:`insight_neighbourhood`): the reference ranks them by how many of the 4 solved
and 2 failed tasks nearest by plain cosine (not the query graph) support them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memarena.core import Backbone, ChatRequest
from memarena.core.json_budget import reply_tokens
from memarena.memory.gmemory import prompts
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryGraph
from memarena.memory.llm_calls import json_batch, record_fallback

FALLBACK_RELEVANCE = "gmemory_relevance"
INSIGHT_SUCCESSES, INSIGHT_FAILURES = 4, 2  # query_insights_with_score: SUCC_NUM, FAIL_NUM


def success_candidates(
    queries: QueryGraph,
    embedding: np.ndarray,
    expanded: Sequence[str],
    pool: int,
    threshold: float,
    status: str = RESOLVED,
) -> list[str]:
    """Steps 1-3 above: at most ``pool`` solved task ids, most similar first. With ``status``
    FAILED, the failed tasks the same way (the reference's failed candidates,
    ``_retrieve_memory_raw``; shown only as a hint, see ``GMemory.failed_cases``)."""
    if pool <= 0:
        return []
    found = [q for q in expanded if queries.nodes[q].status == status]
    if len(found) < pool:
        found = queries.nearest(embedding, pool, status)
    sims = queries.similarity(embedding, found)
    ranked = sorted(found, key=lambda q: -sims[q])  # stable: ties keep their order
    return [q for q in ranked if sims[q] >= threshold][:pool]


def insight_neighbourhood(queries: QueryGraph, embedding: np.ndarray) -> list[str]:
    """The tasks whose support ranks the insights: 4 solved + 2 failed, nearest by cosine."""
    return queries.nearest(embedding, INSIGHT_SUCCESSES, RESOLVED) + queries.nearest(
        embedding, INSIGHT_FAILURES, FAILED
    )


def relevance_request(
    example: str, goal: str, cap: int | None = None, temperature: float = 0.0
) -> ChatRequest:
    user = prompts.RELEVANCE_USER.format(example=example, goal=goal)
    return ChatRequest(
        messages=[
            {"role": "system", "content": prompts.RELEVANCE_SYSTEM},
            {"role": "user", "content": user},
        ],
        json_schema=prompts.RELEVANCE_SCHEMA,
        max_tokens=reply_tokens(prompts.RELEVANCE_SCHEMA, cap),
        temperature=float(temperature),
    )


def _score(answer: object) -> int | None:
    score = answer.get("score") if isinstance(answer, dict) else None
    ok = isinstance(score, int) and not isinstance(score, bool) and 1 <= score <= 10
    return score if ok else None


def rerank(
    llm: Backbone,
    goal: str,
    candidates: Sequence[tuple[str, str]],
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
    cap: int | None = None,
    temperature: float = 0.0,
) -> list[str]:
    """Step 4: ``(id, rendered task)`` candidates by the LLM's 1-10 relevance score (desc),
    ties in the given order, from ONE batched call. A malformed score counts as 0 (the
    reference's value when no number is found) and counts fallback ``gmemory_relevance``."""
    requests = [relevance_request(text, goal, cap, temperature) for _, text in candidates]
    answers = json_batch(llm, requests, usage=usage, fallbacks=fallbacks, kind=FALLBACK_RELEVANCE)
    scores = []
    for answer in answers:
        score = _score(answer)
        if score is None and answer is not None:  # parsed, but no score in range
            record_fallback(llm, FALLBACK_RELEVANCE, fallbacks)
        scores.append(score or 0)
    order = sorted(range(len(candidates)), key=lambda i: -scores[i])
    return [candidates[i][0] for i in order]
