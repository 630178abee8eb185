"""ReMe's Table 1 A-Mem row: ReMe's sweeps run ``method=amem_reme`` (result folder
``amem_reme_full``), which the report puts on the paper's A-Mem row; a plain ``method=amem`` run
(``amem_full``) fills that row only where the section has no ``amem_reme`` run, so the two
readings never pool into one cell."""

from __future__ import annotations

import json

from memarena.reports.reme import tables as rr

BB = "qwen3-8b"  # conf/backbone/qwen3_8b.yaml's name, as in result paths


def _run(root, method: str, avg: float, passed: float) -> None:
    """A reme_table1 run on BFCL-V3 as the pipeline writes it: one repetition of Avg@4 /
    Pass@4, and the report node of conf/experiment/reme_table1.yaml."""
    run_dir = root / "reme_table1" / "bfcl" / method / BB / "seed0"
    run_dir.mkdir(parents=True)
    metrics = {
        "success_rate": avg,
        "avg_steps": 9.0,
        "tokens_per_task": 2000.0,
        "memory_tokens": 0,
        "runs": 4,
        "repetitions": 1,
        "avg_at_k": avg,
        "pass_at_k": passed,
        "at_k_repetitions": [{"avg_at_k": avg, "pass_at_k": passed}],
        "experiment": "reme_table1",
        "env": "bfcl",
        "method": method,
        "ablation": None,
        "backbone": BB,
        "backbone_is_llm": True,
        "seed": 0,
        "report": {"paper": "reme", "tables": ["table1", "table2", "table4", "fig5"]},
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    (run_dir / "episodes.jsonl").write_text("\n")


def _table1(root) -> tuple[dict, str]:
    """{result folder: the row it feeds} and our Pass@4 cell of the A-Mem row (BFCL-V3)."""
    runs = rr.load_runs(root, "table1")
    table = rr.beside_paper(rr.summarize(rr.long_metrics(runs)), "table1")
    mine = table[(table["variant"] == "amem") & table["model"].astype(str).str.contains(BB)]
    assert len(mine) == 1
    rows = dict(zip(runs["method"], runs["variant_key"], strict=True))
    return rows, mine.iloc[0]["Pass@4 ours"]


def test_the_reme_variant_is_the_papers_a_mem_row(tmp_path):
    _run(tmp_path, "amem_reme_full", 0.3, 0.5)
    assert _table1(tmp_path) == ({"amem_reme_full": "amem"}, "50.00 (n=1)")


def test_a_plain_a_mem_run_never_pools_with_the_reme_variant(tmp_path):
    _run(tmp_path, "amem_reme_full", 0.3, 0.5)
    _run(tmp_path, "amem_full", 0.1, 0.1)
    rows, cell = _table1(tmp_path)
    # the row holds the amem_reme run alone: Pass@4 50.00, not 30.00 (the mean of both)
    assert rows == {"amem_reme_full": "amem", "amem_full": "amem_full"} and cell == "50.00 (n=1)"
