"""LangMem end to end with a real model: ``python run.py method=langmem`` with the embedded
SmolLM2-135M as the memory LLM driving the real langmem package (its memory store manager and
trustcall's tool calls, through memarena's JSON-constrained chat-model adapter), a fresh call
cache per run (``run_py``) and prompts recorded. The same two-run shape as
tests/test_memory_end_to_end.py: acquisition with the scripted expert acting (SmolLM2 solves no
PDDL task) and SmolLM2 writing the memory, then SmolLM2 as the agent on that snapshot.

Asserted: the manager wrote Episode items into the store through batched model calls (one per
acquisition wave; the second wave shown the first wave's episodes, so it runs LangMem's update
path), evaluation retrieved them (ids in episodes.jsonl are store keys), and the rendered
``When: / Thought: / Did: / Result:`` text of a retrieved episode is in the prompt of the step
that showed it.
"""

from __future__ import annotations

import pytest
from test_memory_end_to_end import _json, _lines, _run

from memarena.memory.langmem import render_episode

pytestmark = pytest.mark.slow  # ~2.5 minutes on a 2-core CPU

# waves of 2 tasks; every trajectory is added (8 steps are too few for the expert to solve most
# PDDL tasks: the paper's success-only addition is covered by tests/memory/test_langmem.py);
# short fields and observations keep SmolLM2's prompts and replies within CPU minutes
METHOD = [
    "method=langmem",
    "protocol.update_every=2",
    "method.success_only=false",
    "method.max_calls=1",
    "method.field_chars=150",
    "method.observation_chars=150",
    "method.max_tokens=320",
]


def test_langmem_writes_episodes_with_the_real_package_and_shows_them_to_the_model(tmp_path):
    built = _run(
        tmp_path / "acquire",
        [*METHOD, "backbone=scripted", "backbone.epsilon=0.3", "protocol.step_budget=8",
         "protocol.max_train_tasks=4", "protocol.max_eval_tasks=1"],
    )  # fmt: skip
    memory_llm = _json(built / "usage.json")["memory"]
    assert memory_llm["name"] == "smollm2-135m" and memory_llm["cache_misses"] > 0
    metrics = _json(built / "metrics.json")
    usage = metrics["memory_token_usage"]
    # wave 1 (empty store): both trajectories extracted in one batched call; wave 2: the
    # manager found wave 1's episodes and asked for updates / inserts, again in one call
    assert (usage["extract"]["calls"], usage["extract"]["requests"]) == (1, 2)
    assert (usage["update"]["calls"], usage["update"]["requests"]) == (1, 2)
    assert usage["update"]["prompt_tokens"] > 0 and usage["update"]["completion_tokens"] > 0
    state = _json(built / "memory" / "memory.json")["state"]
    items = state["items"]
    assert items and all(i["value"]["kind"] == "Episode" for i in items)
    assert all(set(i["value"]["content"]) == {"observation", "thoughts", "action", "result"}
               for i in items)  # fmt: skip
    assert metrics["memory_entries"] == len(items)
    assert metrics["memory_writes"] - metrics["memory_deletes"] == len(items)
    assert metrics["memory_observed"] == 4
    assert state["counts"]["manager_errors"] == 0  # LangMem's manager ran to its end each time
    # an unusable reply is counted, by the method and by the backbone
    fallbacks = state["fallbacks"].get("langmem_tool_call", 0)
    assert memory_llm["fallbacks"].get("langmem_tool_call", 0) == fallbacks < 4

    run = _run(
        tmp_path / "evaluate",
        [*METHOD, f"protocol.snapshot_from={built}", "protocol.step_budget=3",
         "protocol.max_eval_tasks=2"],
    )  # fmt: skip
    agent = _json(run / "usage.json")["agent"]
    assert agent["is_llm"] and agent["cache_misses"] > 0
    episodes = _lines(run / "episodes.jsonl")
    rendered = {i["key"]: render_episode(i["value"]) for i in items}
    shown = [i for e in episodes for i in e["memory_ids"]]
    assert shown and set(shown) <= set(rendered)  # one episode per task (top_k 1), store keys
    hits = 0
    for e in episodes:
        for step in e["trajectory"]["steps"]:
            prompt = "\n".join(m["content"] for m in step["prompt"])
            hits += any(rendered[i] in prompt for i in step["memory_ids"])
    assert hits > 0, "no step's prompt held the episode it was shown"
    assert all(rendered[i].startswith("When: ") for i in shown)
