"""MemCo's multi-domain protocol for a baseline, through run.py (protocol=memco's per-domain
memories; memory/team.py): one memory per PDDL domain, each acquiring its own domain's tasks,
four agent views on the whole test set, the overlap of MemCo's PDDL lists flagged."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, run_py

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

    text = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "inspect_memory.py"), str(run)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr[-2000:]
    assert all(f"== domain {d} ==" in text.stdout for d in DOMAINS)
