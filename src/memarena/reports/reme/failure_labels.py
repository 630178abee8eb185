"""Failure categories of ReMe's Figure 5(b), labelled by an LLM over the failed trajectories.

The paper's authors "manually review and categorize each failure case" (reme.txt, Error
Analysis) and name two of their categories in the text: Reasoning Error (22 -> 14 on Qwen3-8B)
and Action Omission. The figure's other categories are not in the text copy. Our labelling,
documented as ours and not the paper's: the memory LLM reads each failed evaluation episode of
a run (task, steps, outcome; the checker's verdict is not shown, so the two labellings stay
independent) with the fixed prompt :data:`SYSTEM` / :func:`user_prompt` (version
:data:`PROMPT_VERSION`, written for this project) and answers one of :data:`CATEGORIES`: the
paper's two named categories first, then ours (Parameter Error, Tool Selection Error, Other).
The answer is constrained to that list (a choice constraint: a token trie on hf, guided choice
on vLLM, a JSON-schema enum on OpenAI-compatible APIs); an answer outside it is labelled
:data:`UNLABELLED` and counted.

``scripts/label_failures.py`` writes the labels into the results tree, one JSON line per failed
episode in ``<run dir>/failure_labels.jsonl`` (:data:`LABELS_FILE`) beside ``episodes.jsonl``:
task id, run, repetition, the BFCL checker's error type and its readable category (kept beside
ours), the LLM's category, the labeller model's name and the prompt version. Notebooks read only
that file (:func:`read_labels`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memarena.core.jsonl import read_jsonl
from memarena.core.llm_types import ChatRequest
from memarena.results.collect import read_episodes
from memarena.results.records import EpisodeRecord, latest

log = logging.getLogger(__name__)

LABELS_FILE = "failure_labels.jsonl"
PROMPT_VERSION = "fig5b-v1"
# the paper's named categories first (reme.txt L191), then ours
PAPER_CATEGORIES = ("Reasoning Error", "Action Omission")
CATEGORIES = (*PAPER_CATEGORIES, "Parameter Error", "Tool Selection Error", "Other")
UNLABELLED = "unlabelled"  # the labeller's answer was not one of CATEGORIES
COMMAND = "python scripts/label_failures.py --results-dir {results} --backbone <backbone>"

SYSTEM = (
    "You review failed attempts of a tool-using agent on multi-turn function-calling tasks. "
    "Read the attempt and name the main cause of its failure with exactly one category:\n"
    "- Reasoning Error: the agent misread the request or the tool results, planned the wrong "
    "steps, or carried an earlier mistake forward.\n"
    "- Action Omission: the agent left out a call or a step the request needed (it stopped "
    "early, skipped a turn, or answered without acting).\n"
    "- Parameter Error: the right tool was called with wrong, missing or malformed arguments.\n"
    "- Tool Selection Error: the agent called a tool that does not fit the request, or one that "
    "does not exist.\n"
    "- Other: none of the above (for example an environment error).\n"
    "Answer with the category name only."
)


def user_prompt(episode: EpisodeRecord, max_chars: int = 6000, obs_chars: int = 300) -> str:
    """The labeller's view of one failed episode: the task, its steps (``Step i: action ->
    observation``, cut in the middle past ``max_chars``) and the outcome."""
    traj = episode.trajectory or {}
    task = traj.get("task") or {}
    head = [f"Task: {_clip(task.get('goal', episode.task_id), 1500)}"]
    if traj.get("initial_observation"):
        head.append(f"Start: {_clip(traj['initial_observation'], obs_chars)}")
    steps = [
        f"Step {i}: {_clip(s.get('action', ''), 400)} -> "
        f"{_clip(s.get('observation', ''), obs_chars)}"
        for i, s in enumerate(traj.get("steps") or [], 1)
    ]
    tail = [
        f"Outcome: failure (status {episode.status}, progress {episode.progress:.2f}, "
        f"{episode.steps} steps)",
        f"Categories: {', '.join(CATEGORIES)}.",
    ]
    budget = max_chars - sum(len(x) + 1 for x in head + tail)
    if sum(len(x) + 1 for x in steps) > budget and steps:
        keep, used = [], 0
        order = [i // 2 if i % 2 == 0 else len(steps) - 1 - i // 2 for i in range(len(steps))]
        for k in order:
            if k in keep or used + len(steps[k]) + 1 > budget - 40:
                break
            keep.append(k)
            used += len(steps[k]) + 1
        keep.sort()
        omitted = len(steps) - len(keep)
        cut = next((j for j in range(1, len(keep)) if keep[j] != keep[j - 1] + 1), len(keep))
        steps = (
            [steps[k] for k in keep[:cut]]
            + [f"... ({omitted} steps omitted) ..."]
            + [steps[k] for k in keep[cut:]]
        )
    return "\n".join(head + (steps or ["(no steps)"]) + tail)


def _clip(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def request(episode: EpisodeRecord, max_tokens: int = 16) -> ChatRequest:
    """One labelling request, its answer constrained to :data:`CATEGORIES`."""
    return ChatRequest(
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user_prompt(episode)},
        ],
        choices=list(CATEGORIES),
        temperature=0.0,
        max_tokens=max_tokens,
    )


def failed_episodes(run_dir: str | Path) -> list[EpisodeRecord]:
    """The failed evaluation episodes of a run (the last record of each), in file order."""
    return [e for e in latest(read_episodes(run_dir)) if not e.success]


def label_run(
    run_dir: str | Path,
    llm: Any,
    checker_category: Callable[[EpisodeRecord], str],
    batch_size: int = 32,
) -> list[dict[str, Any]]:
    """Label every failed episode of ``run_dir`` with ``llm`` (batched ``generate`` calls) and
    write them to ``<run_dir>/failure_labels.jsonl``; returns the rows. ``checker_category``
    maps an episode to the checker's readable category (kept beside ours)."""
    episodes = failed_episodes(run_dir)
    rows: list[dict[str, Any]] = []
    name = str(getattr(llm, "name", type(llm).__name__))
    for start in range(0, len(episodes), batch_size):
        chunk = episodes[start : start + batch_size]
        completions = llm.generate([request(e) for e in chunk])
        for episode, completion in zip(chunk, completions, strict=True):
            text = str(completion.text).strip()
            category = text if text in CATEGORIES and not completion.fallback else UNLABELLED
            if category == UNLABELLED:
                log.warning("failure label of %s run %s: %r is not a category",
                            episode.task_id, episode.run, text[:80])  # fmt: skip
            rows.append(
                {
                    "task_id": episode.task_id,
                    "run": episode.run,
                    "repetition": episode.repetition,
                    "status": episode.status,
                    "checker_error_type": (episode.details or {}).get("checker_error_type"),
                    "checker_category": checker_category(episode),
                    "category": category,
                    "labeller": name,
                    "prompt_version": PROMPT_VERSION,
                }
            )
    path = Path(run_dir) / LABELS_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)
    return rows


def read_labels(run_dir: str | Path) -> list[dict[str, Any]] | None:
    """The rows of ``<run_dir>/failure_labels.jsonl``; None when the run has not been labelled."""
    path = Path(run_dir) / LABELS_FILE
    if not path.exists():
        return None
    return read_jsonl(path)


def labelled_with(rows: Sequence[dict[str, Any]] | None) -> set[tuple[str, str]]:
    """The (labeller, prompt version) pairs of a run's labels."""
    return {(str(r.get("labeller")), str(r.get("prompt_version"))) for r in rows or []}
