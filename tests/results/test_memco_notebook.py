"""notebooks/memco.ipynb on an empty results dir and on a small hand-built results tree in the
pipeline's layout and keys (folder names, ``per_split``, ``global_records``; the Table 1 and 12
cells on runs the pipeline really wrote are in test_notebooks_real_runs.py), plus unit tests of
memarena.results.memco_report."""

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, notebook_text, run_notebook
from memarena.results import memco_report as mr
from memarena.results.paper import paper_numbers
from memarena.results.report_common import declaring_configs, experiment_configs

MEMCO_NB = ROOT / "notebooks" / "memco.ipynb"
PNG = b"\x89PNG\r\n\x1a\n"
CONFIGS = {c.name: c for c in experiment_configs()}  # conf/experiment/*.yaml


def write_run(
    root: Path,
    config: str,
    env: str,
    method: str,
    ablation: str | None,
    backbone: str,
    seed: int,
    metrics: dict,
    step_budget: int = 30,
) -> Path:
    """A run as ``python run.py experiment=<config>`` writes it: under the config's
    experiment_name (``<method>+<ablation name>`` for an ablation), with its ``report`` node
    in metrics.json."""
    declared = CONFIGS[config]
    experiment = declared.experiment_name
    report = {"paper": declared.paper, "tables": list(declared.tables)}
    part = f"{method}+{ablation}" if ablation else method
    run_dir = root / experiment / env / part / backbone / f"seed{seed}"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        f"seed: {seed}\nmethod:\n  name: {method}\nenv:\n  name: {env}\n"
        f"protocol:\n  step_budget: {step_budget}\n"
    )
    ids = {
        "experiment": experiment,
        "env": env,
        "method": method,
        "ablation": ablation,
        "backbone": backbone,
        "backbone_is_llm": True,
        "seed": seed,
        "report": report,
    }
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, **ids}))
    return run_dir


def split_metrics(success: float, steps: float) -> dict:
    """One ``per_split`` entry as metrics.py writes it (10 episodes)."""
    return {"success_rate": success, "progress_rate": 0.9, "n_episodes": 10, "avg_steps": steps}


def alfworld_metrics(seen: float, unseen: float, steps: float, **extra) -> dict:
    return {
        "success_rate": (seen + unseen) / 2,
        "progress_rate": 0.9,
        "avg_steps": steps,
        "tokens_per_task": 1000.0,
        "per_split": {
            "valid_seen": split_metrics(seen, steps - 1),
            "valid_unseen": split_metrics(unseen, steps + 1),
        },
        **extra,
    }


def build_fake_tree(root: Path) -> Path:
    bb = "qwen3-32b"  # conf/backbone/qwen3_32b.yaml's name
    for seed in (0, 1):
        d = 0.01 * seed
        for method, (acc, steps) in {
            "icl": (0.6, 20.0),
            "gmemory": (0.7, 15.0),
            "memco": (0.9, 10.0),
        }.items():
            write_run(
                root,
                "memco_table1_alfworld",
                "alfworld",
                method,
                None,
                bb,
                seed,
                alfworld_metrics(acc + d, acc - 0.05, steps),
            )
            write_run(
                root,
                "memco_table1_fever",
                "fever",
                method,
                None,
                bb,
                seed,
                {
                    "success_rate": acc - 0.1 + d,
                    "progress_rate": acc,
                    "avg_steps": steps / 2,
                    "tokens_per_task": 500.0,
                },
            )
        for lam, records in (("0.25", 735), ("0.35", 426), ("0.50", 294)):
            write_run(
                root,
                "memco_table11",
                "alfworld",
                "memco",
                f"lambda_{lam}",
                bb,
                seed,
                alfworld_metrics(0.96 + d, 0.97, 12.0, global_records=records),
            )
        for budget in (10, 30, 50):
            for method, acc in (("memco", 0.5 + budget / 100), ("icl", 0.3 + budget / 100)):
                write_run(
                    root,
                    "memco_table13",
                    "alfworld",
                    method,
                    f"budget_{budget}",
                    bb,
                    seed,
                    alfworld_metrics(acc, acc - 0.05, budget * 0.6),
                    step_budget=budget,
                )
    return root


def params(results: Path, out: Path) -> str:
    return f"RESULTS_DIR = {str(results)!r}\nOUT_DIR = {str(out)!r}\n"


def test_notebook_on_empty_results(tmp_path):
    out = tmp_path / "out"
    nb = run_notebook(MEMCO_NB, params(tmp_path / "no_results", out))
    text = notebook_text(nb)
    for section in mr.SECTIONS:  # each section's hint names the configs that declare it
        for config in declaring_configs("memco", section):
            assert f"  {config.command}" in text
    assert "python run.py -m experiment=memco_table1_alfworld backbone=<preset>" in text
    assert mr.command_for("table1") in text  # Appendix H
    assert "43.47" in text and "0.9929" in text  # the paper's numbers alone
    # paper-only figures and tables
    for name in ("fig4ab_threshold.png", "fig4cd_ablations.png", "fig3abc_memory_cost.png"):
        assert (out / name).read_bytes()[:8] == PNG
    assert (out / "table11.csv").exists() and (out / "appH_paper.csv").exists()
    assert not (out / "fig3d_budget.png").exists()


def test_notebook_on_fake_results(tmp_path):
    results, out = build_fake_tree(tmp_path / "results"), tmp_path / "out"
    nb = run_notebook(MEMCO_NB, params(results, out))
    for name in (
        "fig4ab_threshold.png",
        "fig4cd_ablations.png",
        "fig3abc_memory_cost.png",
        "fig3d_budget.png",
    ):
        assert (out / name).read_bytes()[:8] == PNG, name
    t1 = pd.read_csv(out / "table1.csv")
    assert {"icl", "gmemory", "memco"} <= set(t1.columns)
    assert set(t1["setting"]) == {"fever", "alfworld", "alfworld_familiar", "alfworld_heldout"}
    t11 = pd.read_csv(out / "table11.csv")
    row = t11[(t11["variant"] == "lambda_0.25") & (t11["metric"] == "global_records")]
    assert row["ours"].iloc[0] == "735.0 ± 0.0" and row["paper"].iloc[0] == 735
    t13 = pd.read_csv(out / "table13.csv")
    assert sorted(t13["step_budget"].unique()) == [10, 30, 50]
    assert set(t13["variant"]) == {"icl", "memco"}
    paired = pd.read_csv(out / "appH_paired.csv")
    assert set(paired["baseline"]) == {"icl", "gmemory"}
    assert set(paired["metric"]) == {"accuracy", "steps"} and "p_holm" in paired
    assert "memco_table12" in notebook_text(nb)  # missing sections still say how to get them


def test_variant_and_backbone_keys():
    assert mr.variant_key("memco", "memco/local_only") == "local_only"
    assert mr.variant_key("memco", "memco-lambda_0.25") == "lambda_0.25"
    assert mr.variant_key("icl", None) == mr.variant_key("icl", "none") == "icl"
    assert mr.backbone_key("Qwen3-32B") == mr.backbone_key("qwen3_32b")


def test_load_runs_long_metrics_and_summary(tmp_path):
    results = build_fake_tree(tmp_path / "r")
    assert mr.load_runs(results, "table12").empty
    runs = mr.load_runs(results, "table13")
    assert sorted(runs["step_budget"].unique()) == [10, 30, 50]
    assert set(runs["experiment"]) == {"memco_table13"}
    assert set(mr.load_runs(results, "table1")["env"]) == {"alfworld", "fever"}
    with pytest.raises(ValueError, match="'memco_table11' is not a memco report section"):
        mr.load_runs(results, "memco_table11")
    runs11 = mr.load_runs(results, "table11")
    long = mr.long_metrics(runs11)
    s = mr.summarize(long)
    fam = s[
        (s["setting"] == "alfworld_familiar")
        & (s["metric"] == "accuracy")
        & (s["variant"] == "lambda_0.35")
    ]
    assert fam["mean"].iloc[0] == pytest.approx(96.5)  # (96 + 97) / 2 in percent
    assert fam["std"].iloc[0] == pytest.approx(0.7071, abs=1e-4)
    steps = s[(s["setting"] == "alfworld_heldout") & (s["metric"] == "steps")]
    assert steps["mean"].tolist() == pytest.approx([13.0] * 3)
    assert set(s[s["metric"] == "global_records"]["setting"]) == {"alfworld"}


def test_relative_gains_and_blocks():
    summary = pd.DataFrame(
        {
            "setting": ["fever"] * 6,
            "backbone": ["b"] * 6,
            "variant": ["icl", "memskill", "memco"] * 2,
            "metric": ["accuracy"] * 3 + ["steps"] * 3,
            "mean": [50.0, 80.0, 90.0, 10.0, 8.0, 6.0],
            "std": [float("nan")] * 6,
            "n_seeds": [1] * 6,
        }
    )
    g = mr.relative_gains(summary).iloc[0]
    assert g["runner_up_accuracy"] == "memskill"
    assert g["rel_gain_accuracy_pct"] == pytest.approx(12.5)
    assert g["rel_reduction_steps_pct"] == pytest.approx(25.0)
    b = mr.blocks(summary, "accuracy")
    assert list(b.columns) == ["icl", "memskill", "memco"] and list(b.index) == ["b|fever"]
    deltas = mr.deltas_from(summary.assign(variant=["no_rx", "cosine", "memco"] * 2))
    d = deltas.set_index(["variant", "metric"])["delta"]
    assert d[("no_rx", "accuracy")] == -40.0 and d[("cosine", "steps")] == 2.0


def test_beside_paper_without_results():
    table = mr.beside_paper(mr.summarize(mr.long_metrics(pd.DataFrame())), ["table12"])
    assert (table["ours"] == "-").all()
    assert len(table) == (paper_numbers()["table"] == "table12").sum()


def test_paper_numbers_csv():
    df = paper_numbers("memco")
    assert list(df.columns) == [
        "table",
        "setting",
        "backbone",
        "variant",
        "metric",
        "value",
        "source",
    ]
    assert df["source"].str.len().gt(5).all()
    key = df.set_index(["table", "setting", "variant", "metric"])["value"]
    assert key[("table12", "alfworld_heldout", "local_only", "accuracy")] == 89.64
    assert key[("table11", "alfworld", "lambda_0.25", "global_records")] == 735
    assert key[("appH", "table1_blocks", "friedman", "C_accuracy")] == 0.9929
    derived = df[df["source"].str.startswith("derived")]
    assert len(derived) == 6
    assert not df.duplicated(["table", "setting", "backbone", "variant", "metric"]).any()
    with pytest.raises(FileNotFoundError):
        paper_numbers("nope")
