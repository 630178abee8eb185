"""collect / summary_table / Markdown on a hand-built results tree, and the make_tables CLI."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from memarena.results.collect import (
    collect,
    format_summary,
    in_report,
    plot_summary,
    read_episodes,
    summary_table,
    to_markdown,
    write_tables,
)
from memarena.results.records import EpisodeRecord

REPO = Path(__file__).resolve().parents[2]


REPORT = {"paper": "memco", "tables": ["table1", "table11"]}


def write_run(root, experiment, env, variant, backbone, seed, metrics, *, ids=True, report=REPORT):
    """A run directory with metrics.json as the pipeline writes it (ids and the ``report``
    node its config declared); ``ids=False``: no ids, ``report=None``: no report node."""
    run_dir = root / experiment / env / variant / backbone / f"seed{seed}"
    run_dir.mkdir(parents=True)
    method, _, ablation = variant.partition("+")
    keys = {
        "experiment": experiment,
        "env": env,
        "method": method,
        "ablation": ablation or None,
        "backbone": backbone,
        "backbone_is_llm": backbone != "scripted",
        "seed": seed,
        **({"report": report} if report is not None else {}),
    }
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, **(keys if ids else {})}))
    return run_dir


def m(success, progress, steps=10.0, tokens=500.0, **extra):
    return {
        "success_rate": success,
        "progress_rate": progress,
        "avg_steps": steps,
        "n_episodes": 10,
        "tokens_per_task": tokens,
        "per_domain": {"kitchen": {"success_rate": success, "n_episodes": 10}},
        **extra,
    }


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "results"
    write_run(root, "t1", "pddl", "none", "scripted", 0, m(0.4, 0.5))
    write_run(root, "t1", "pddl", "none", "scripted", 1, m(0.6, 0.7))
    write_run(
        root,
        "t1",
        "pddl",
        "memco+local_only",
        "scripted",
        0,
        m(0.8, 0.9, avg_at_k=0.75, pass_at_k=1.0),
    )
    # no identification keys and no report node in the file (older results): the keys are
    # read off the path, the membership is empty
    write_run(
        root,
        "t1",
        "pddl",
        "memco+local_only",
        "scripted",
        1,
        m(0.7, 0.8, avg_at_k=0.65, pass_at_k=0.9),
        ids=False,
        report=None,
    )
    (root / "tables").mkdir()  # an output folder next to the runs is ignored
    snapshot = root / "t1/pddl/none/scripted/seed0/memory"
    snapshot.mkdir()
    (snapshot / "metrics.json").write_text("{}")  # not a run directory: ignored
    return root


def test_collect_one_row_per_run(tree):
    df = collect(tree)
    assert len(df) == 4
    assert sorted(df["variant"].unique()) == ["memco+local_only", "none"]
    row = df[(df.variant == "memco+local_only") & (df.seed == 1)].iloc[0]
    assert (row.method, row.ablation, row.backbone, row.env) == (
        "memco",
        "local_only",
        "scripted",
        "pddl",
    )
    assert row["per_domain/kitchen/success_rate"] == 0.7
    assert Path(row.run_dir) == tree / "t1/pddl/memco+local_only/scripted/seed1"
    # any folder inside the tree works too; ids still come from the file or the path
    sub = collect(tree / "t1/pddl/memco+local_only")
    assert len(sub) == 2 and set(sub["ablation"]) == {"local_only"}


def test_collect_report_membership(tree):
    """``report_paper`` / ``report_tables`` hold what the run's config declared (empty for runs
    without the node), not flattened ``report/...`` columns; :func:`in_report` selects by it."""
    df = collect(tree)
    assert not [c for c in df.columns if c.startswith("report/")]
    old = df["run_dir"].str.endswith("memco+local_only/scripted/seed1")
    assert df.loc[old, "report_paper"].isna().all()
    assert list(df.loc[old, "report_tables"]) == [()]
    assert set(df.loc[~old, "report_paper"]) == {"memco"}
    assert set(df.loc[~old, "report_tables"]) == {("table1", "table11")}
    assert list(in_report(df, "memco", "table1")) == list(~old)
    assert not in_report(df, "memco", "table12").any()  # exact names, no prefix match
    assert not in_report(df, "reme", "table1").any()
    assert not in_report(df.iloc[:0], "memco", "table1").any()
    assert df.columns.get_loc("report_tables") == df.columns.get_loc("variant") + 2


def test_summary_mean_std_over_seeds(tree):
    s = summary_table(collect(tree), ["success_rate", "avg_at_k"])
    none = s[s.variant == "none"].iloc[0]
    # none: success 0.4, 0.6 -> mean 0.5, sample std sqrt(0.1^2 + 0.1^2) = 0.1414
    assert none.n_seeds == 2 and none.success_rate_mean == pytest.approx(0.5)
    assert none.success_rate_std == pytest.approx(0.02**0.5)
    assert pd.isna(none.avg_at_k_mean)  # k = 1 runs have no Avg@k
    memco = s[s.variant == "memco+local_only"].iloc[0]
    # memco: Avg@k 0.75, 0.65 -> 0.70 ± 0.0707
    assert memco.avg_at_k_mean == pytest.approx(0.70)
    assert memco.avg_at_k_std == pytest.approx(0.005**0.5)
    assert not none.backbone_is_llm

    md = to_markdown(format_summary(s))
    lines = md.splitlines()
    assert lines[0].startswith("| experiment | env ") and set(lines[1]) <= set("|-: ")
    assert "| 0.500 ± 0.141 (n=2) |" in md and "| 0.700 ± 0.071 (n=2) |" in md and "| - " in md


def test_single_seed_and_bad_metric(tree):
    df = collect(tree)
    s = summary_table(df[df.seed == 0], ["tokens_per_task"])
    # no ± for 1 seed; the one seed its experiment ran here is all it has
    assert list(format_summary(s)["tokens_per_task"]) == ["500.0 (n=1)", "500.0 (n=1)"]
    with pytest.raises(ValueError, match="unknown metrics \\['sucess_rate'\\]"):
        summary_table(df, ["sucess_rate"])


def test_empty_results_dir_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no metrics.json.*seed<k>/metrics.json"):
        collect(tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        collect(tmp_path / "nope")


def test_write_tables_and_read_episodes(tree, tmp_path):
    paths = write_tables(collect(tree), tmp_path / "out")
    assert sorted(p.name for p in paths.values()) == ["runs.csv", "summary.csv", "summary.md"]
    summary = pd.read_csv(paths["summary_csv"])
    # default metrics + avg_at_k / pass_at_k since some run has them
    assert {"success_rate_mean", "tokens_per_task_std", "pass_at_k_mean"} <= set(summary.columns)
    run_dir = tree / "t1/pddl/none/scripted/seed0"
    line = {"task_id": "a", "success": True, "progress": 1.0, "steps": 3, "status": "success"}
    (run_dir / "episodes.jsonl").write_text(json.dumps(line) + "\n\n")
    assert read_episodes(run_dir) == [EpisodeRecord.from_json(line)]


def test_make_tables_cli(tree, tmp_path):
    out = tmp_path / "tables"
    cmd = [
        sys.executable,
        str(REPO / "scripts/make_tables.py"),
        "--results-dir",
        str(tree),
        "--out",
        str(out),
        "--metrics",
        "success_rate",
        "progress_rate",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    md = (out / "summary.md").read_text()
    assert "memco+local_only" in md and "0.750 ± 0.071 (n=2)" in md  # success 0.8, 0.7
    assert md.split("-->")[1].strip() in res.stdout
    csv = pd.read_csv(out / "summary.csv")
    assert list(csv.columns) == [
        "experiment",
        "env",
        "variant",
        "backbone",
        "n_seeds",
        "n_expected",
        "identical",
        "n_episodes",
        "flags",
        "backbone_is_llm",
        "success_rate_mean",
        "success_rate_std",
        "progress_rate_mean",
        "progress_rate_std",
    ]
    assert len(pd.read_csv(out / "runs.csv")) == 4

    res = subprocess.run(
        [*cmd[:2], "--results-dir", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_a_lost_seed_is_a_partial_cell_and_identical_seeds_print_once(tmp_path):
    """A sweep over seeds 0-2 whose ``memco`` lost seed 2: its cell says ``n=2 of 3``; the
    three ``none`` seeds share one run fingerprint (one run repeated): printed once, not as
    ``± 0.000``."""
    root = tmp_path / "results"
    for seed in (0, 1, 2):
        write_run(root, "t1", "pddl", "none", "qwen3-8b", seed,
                  m(0.5, 0.6, n_tasks=4, run_fingerprint="same"))  # fmt: skip
    for seed, rate in ((0, 0.5), (1, 0.75)):
        write_run(root, "t1", "pddl", "memco", "qwen3-8b", seed,
                  m(rate, 0.6, n_tasks=4, run_fingerprint=f"f{seed}"))  # fmt: skip
    s = summary_table(collect(root), ["success_rate"]).set_index("variant")
    assert (s.loc["memco", "n_seeds"], s.loc["memco", "n_expected"]) == (2, 3)
    assert s.loc["none", "identical"] and not s.loc["memco", "identical"]
    cells = format_summary(s.reset_index()).set_index("variant")["success_rate"]
    assert cells["memco"] == "0.625 ± 0.177 (n=2 of 3)"
    assert cells["none"] == "0.500 (3 seeds, identical runs)"


def test_make_tables_refuses_flagged_runs_unless_allowed(tmp_path):
    """A capped run on stand-in data: no table is written without --allow-flagged (the runs
    and their flags are named); with it, every row carries its flags."""
    root = tmp_path / "results"
    write_run(root, "t1", "pddl_generated", "none", "qwen3-8b", 0,
              m(0.5, 0.6, flags=["capped", "stand_in_data"]))  # fmt: skip
    write_run(root, "t1", "pddl_generated", "memco", "qwen3-8b", 0,
              m(0.7, 0.8, flags=["train_test_overlap"]))  # fmt: skip
    out = tmp_path / "tables"
    cmd = [sys.executable, str(REPO / "scripts/make_tables.py"), "--results-dir", str(root),
           "--out", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and not out.exists()
    assert "1 of 2 runs are flagged" in res.stderr and "capped, stand_in_data" in res.stderr
    assert "--allow-flagged" in res.stderr and "memco" not in res.stderr  # overlap: a paper cell
    res = subprocess.run([*cmd, "--allow-flagged"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    summary = pd.read_csv(out / "summary.csv", keep_default_na=False).set_index("variant")
    assert summary.loc["none", "flags"] == "capped,stand_in_data"
    assert summary.loc["memco", "flags"] == "train_test_overlap"
    assert "capped,stand_in_data" in (out / "summary.md").read_text()


def test_overview_figure_panels_show_only_their_runs_and_bounded_error_bars():
    """plot_summary (overview.png): a panel lists the methods that ran in its experiment, each
    in the colour it has in every panel, and a rate's error bar stops at 1."""
    rows = [
        ("memco_table1", "pddl", "memco", 0.9, 0.3),
        ("memco_table1", "pddl", "gmemory", 0.5, 0.1),
        ("demo", "pddl", "none", 0.2, float("nan")),
        ("demo", "pddl", "memco", 0.05, 0.2),
    ]
    summary = pd.DataFrame(
        [{"experiment": e, "env": v, "variant": m, "backbone": "b",
          "success_rate_mean": mean, "success_rate_std": std} for e, v, m, mean, std in rows]
    )  # fmt: skip
    fig = plot_summary(summary, ["success_rate"])
    top, bottom = fig.axes
    assert [t.get_text() for t in top.get_yticklabels()] == ["memco", "gmemory"]
    assert [t.get_text() for t in bottom.get_yticklabels()] == ["memco", "none"]  # one order
    assert top.patches[0].get_facecolor() == bottom.patches[0].get_facecolor()  # memco
    assert top.patches[1].get_facecolor() != bottom.patches[1].get_facecolor()
    assert top.get_legend() is None and bottom.get_legend() is None  # the y axis names them
    for ax in (top, bottom):
        assert ax.get_xlim() == (0.0, 1.0)
        ends = [x for c in ax.collections for seg in c.get_segments() for x, _ in seg]
        assert ends and min(ends) >= 0.0 and max(ends) <= 1.0
    spans = [list(seg[:, 0]) for seg in top.collections[0].get_segments()]
    # 0.9 - 0.3 .. 1 (clipped); 0.5 +- 0.1
    assert spans == [pytest.approx([0.6, 1.0]), pytest.approx([0.4, 0.6])]
    spans = [list(seg[:, 0]) for seg in bottom.collections[0].get_segments()]
    assert spans == [pytest.approx([0.0, 0.25])]  # 0.05 - 0.2 from 0; one seed: no bar
