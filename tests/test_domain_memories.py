"""MemCo's multi-domain protocol for a baseline, through run.py (protocol=memco's per-domain
memories; memory/team.py): one memory per PDDL domain, each acquiring its own domain's tasks,
four agent views on the whole test set, the overlap of MemCo's PDDL lists flagged."""

from __future__ import annotations

import json
import re

from conftest import ROOT, run_py, run_script

DOMAINS = ["barman", "blocksworld", "gripper", "tyreworld"]


def test_a_baseline_learns_one_memory_per_domain_and_every_domain_agent_is_evaluated(
    tmp_path, shared_data
):
    pddl = shared_data / "agentboard_pddl"
    out = run_py(
        [
            "experiment=memco_table1_pddl",
            "method=amem_lite",
            "backbone=scripted",
            f"env.problems_dir={pddl}",
            "protocol.max_train_tasks=8",
            "protocol.max_eval_tasks=1",
            "logger=none",
            f"paths.results_dir={tmp_path}",
        ]
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run = next(tmp_path.rglob("metrics.json")).parent
    metrics = json.loads((run / "metrics.json").read_text())
    assert sorted(metrics["per_agent"]) == DOMAINS
    assert all(m["n_episodes"] == 1 for m in metrics["per_agent"].values())
    assert "train_test_overlap" in metrics["flags"] and metrics["train_test_overlap_tasks"] == 1
    assert metrics["domain_memories"] == 4

    state = json.loads((run / "memory" / "memory.json").read_text())["state"]
    assert sorted(state["domain_memories"]) == DOMAINS and state["global"] is None  # A-Mem: none
    for domain, notes in state["domain_memories"].items():
        assert notes["notes"], domain
        assert all(f"/{domain}/" in n["id"] for n in notes["notes"]), domain

    # while acquiring, an episode is shown its own domain's notes only
    shown = [
        (json.loads(line)["domain"], json.loads(line)["memory_ids"])
        for line in (run / "acquisition.jsonl").read_text().splitlines()
    ]
    assert any(ids for _, ids in shown)
    assert all(f"/{domain}/" in i for domain, ids in shown for i in ids)
    # during evaluation each agent's view shows its own domain's notes, on every test task
    for line in (run / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["memory_ids"] and all(
            f"/{record['agent']}/" in i for i in record["memory_ids"]
        )

    text = run_script(ROOT / "scripts" / "inspect_memory.py", [run], timeout=120)
    assert text.returncode == 0, text.stderr[-2000:]
    assert all(f"== domain {d} ==" in text.stdout for d in DOMAINS)


def test_memco_acquires_without_global_memory_and_shows_only_admissible_next_actions(
    tmp_path, shared_data
):
    """MemCo under its protocol on AgentBoard's PDDL: no acquisition episode is shown a global
    record (the global memory is built once the local stores are complete), evaluation shows
    global records to every agent, and no step's memory names a next action the env did not
    offer at that step (B.4.4: unavailable actions are discarded)."""
    out = run_py(
        [
            "experiment=memco_table1_pddl",
            "method=memco",
            "method.threshold=0.05",  # promotes within 16 tasks (the ablation's globals show)
            "backbone=scripted",
            f"env.problems_dir={shared_data / 'agentboard_pddl'}",
            "protocol.max_train_tasks=16",
            "protocol.max_eval_tasks=2",
            "logger=none",
            f"paths.results_dir={tmp_path}",
        ]
    )
    assert out.returncode == 0, out.stderr[-3000:]
    run = next(tmp_path.rglob("metrics.json")).parent
    acquired = [json.loads(line) for line in (run / "acquisition.jsonl").read_text().splitlines()]
    assert any(r["memory_ids"] for r in acquired)
    assert not [i for r in acquired for i in r["memory_ids"] if i.startswith("global:")]
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert sorted({e["agent"] for e in episodes}) == DOMAINS
    assert any(i.startswith("global:") for e in episodes for i in e["memory_ids"])
    shown = 0
    for step in (s for e in episodes for s in e["trajectory"]["steps"]):
        text = (step.get("memory") or {}).get("memco", "")
        named = re.findall(r"\(next: ([^)]*)\)", text) + re.findall(r"Next priority: (.*)", text)
        for action in (a.strip() for a in named):
            if not action.startswith("no grounded next action"):
                shown += 1
                assert action in step["admissible_actions"], (action, step["admissible_actions"])
    assert shown > 0
