"""notebooks/reme.ipynb on an empty results dir and on a small hand-built results tree in the
pipeline's layout and keys (Tables 1-5, Figure 4 cells, episodes for Figure 5, the cross-paper
runs, ``memory_token_usage`` / ``memory_fallbacks``; Table 1, Figure 5 and the cost table on
runs the pipeline really wrote are in test_notebooks_real_runs.py), plus unit tests of
memarena.reports.reme.tables, of the selection of a section's runs by the report membership
their metrics.json declares, and of the paper's stated numbers."""

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, notebook_text, run_notebook
from memarena.reports.common import declaring_configs, experiment_configs
from memarena.reports.paper import COLUMNS, paper_numbers
from memarena.reports.reme import tables as rr
from memarena.results.records import EpisodeRecord

REME_NB = ROOT / "notebooks" / "reme.ipynb"
PNG = b"\x89PNG\r\n\x1a\n"
BB = "qwen3-8b"  # conf/backbone/qwen3_8b.yaml's name, as in result paths
TASKS = [f"multi_turn_base_{i}" for i in range(10)]
CONFIGS = {c.name: c for c in experiment_configs()}  # conf/experiment/*.yaml


def write_run(
    root,
    config,
    env,
    method,
    ablation,
    seed,
    metrics,
    episodes=None,
    *,
    experiment=None,
    report=None,
) -> Path:
    """A run as ``python run.py experiment=<config>`` writes it: under the config's
    experiment_name, with its ``report`` node in metrics.json; ``experiment`` / ``report``
    override them (``report=False``: no node, as runs written before the pipeline had it)."""
    declared = CONFIGS.get(config)
    experiment = experiment or declared.experiment_name
    if report is None:
        report = {"paper": declared.paper, "tables": list(declared.tables)}
    part = f"{method}+{ablation}" if ablation else method
    run_dir = root / experiment / env / part / BB / f"seed{seed}"
    run_dir.mkdir(parents=True)
    ids = {
        "experiment": experiment,
        "env": env,
        "method": method,
        "ablation": ablation,
        "backbone": BB,
        "backbone_is_llm": True,
        "seed": seed,
        **({"report": report} if report is not False else {}),
    }
    (run_dir / "metrics.json").write_text(json.dumps({**metrics, **ids}))
    lines = [json.dumps(e) for e in episodes or []]
    (run_dir / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def at_k(avgs, passes, **extra) -> dict:
    """metrics.json of a protocol=reme run: k = 4, one (Avg@4, Pass@4) per repetition."""
    reps = [{"avg_at_k": a, "pass_at_k": p} for a, p in zip(avgs, passes, strict=True)]
    n = len(reps)
    return {
        "success_rate": sum(avgs) / n,
        "avg_steps": 9.0,
        "tokens_per_task": 2000.0,
        "memory_tokens": 0,
        "runs": 4,
        "repetitions": n,
        "avg_at_k": sum(avgs) / n,
        "pass_at_k": sum(passes) / n,
        "at_k_repetitions": reps,
        **extra,
    }


def episode(task, run, rep, success, error=None, status=None, turns_done=3) -> dict:
    return {
        "task_id": task,
        "split": "test",
        "domain": "multi_turn_base",
        "run": run,
        "repetition": rep,
        "success": success,
        "progress": 1.0 if success else 0.5,
        "steps": 10,
        "status": status or ("success" if success else "failure"),
        "memory_ids": [],
        "details": {
            "checker_valid": success,
            "checker_error_type": None if success else error,
            "turns_done": turns_done,
            "turns": 3,
        },
    }


STATE = "multi_turn:instance_state_mismatch"
# failed tasks (index -> error of its runs) in repetition 0; every other task succeeds once
NONE_FAILS = {
    0: [STATE] * 4,
    1: [STATE] * 4,
    2: ["step"] * 4,  # ended before the last turn
    3: ["multi_turn:empty_turn_model_response"] * 4,
    4: ["multi_turn:execution_response_mismatch", STATE] * 2,  # tie: run 0's wins
    5: ["multi_turn:method_invoke_order_mismatch"] * 4,
}
DYNAMIC_FAILS = {4: [STATE] * 4, 5: [STATE] * 4, 6: ["multi_turn:something_new"] * 4}


def episodes_of(fails: dict) -> list[dict]:
    out = []
    for i, task in enumerate(TASKS):
        for run in range(4):
            if i in fails:
                error = fails[i][run]
                if error == "step":
                    out.append(episode(task, run, 0, False, STATE, turns_done=1))
                else:
                    out.append(episode(task, run, 0, False, error))
            else:
                out.append(episode(task, run, 0, run == 2))
            out.append(episode(task, run, 1, False, STATE))  # repetition 1: all fail
    return out


def build_fake_tree(root: Path) -> Path:
    t1 = "reme_table1"  # the config file; reme_table1_dynamic writes into the same experiment
    write_run(
        root,
        t1,
        "bfcl",
        "none",
        None,
        0,
        at_k([0.40, 0.41, 0.42], [0.58, 0.60, 0.62]),
        episodes_of(NONE_FAILS),
    )
    cost = {
        "memory_experiences": 120,
        "memory_added": 130,
        "memory_deleted": 0,
        "memory_judge_rejected": 25,
        "memory_duplicates": 10,
        "acquisition_llm_calls_per_task": 12.0,
        "acquisition_tokens_per_task": 30000.0,
        "memory_token_usage": {
            "summarize": {
                "calls": 300,
                "requests": 300,
                "prompt_tokens": 1000,
                "completion_tokens": 500,
            },
            "judge": {"calls": 100, "requests": 100, "prompt_tokens": 200, "completion_tokens": 50},
        },
        "memory_fallbacks": {"json_invalid": 1, "reme_summarize": 2},
        "memory_fallback_rate": 0.0075,  # 3 of 400 requests
    }
    write_run(
        root,
        t1,
        "bfcl",
        "reme",
        None,
        0,
        at_k([0.44, 0.45, 0.46], [0.64, 0.66, 0.68], **cost),
        episodes_of({0: [STATE] * 4}),
    )
    write_run(
        root,
        "reme_table1_dynamic",
        "bfcl",
        "reme",
        "dynamic",
        0,
        at_k([0.47, 0.47, 0.47], [0.70, 0.70, 0.70], **{**cost, "memory_deleted": 7}),
        episodes_of(DYNAMIC_FAILS),
    )
    write_run(
        root,
        "reme_table2",
        "bfcl",
        "reme",
        "trajectory",
        0,
        at_k([0.42, 0.42, 0.42], [0.61, 0.61, 0.61]),
    )
    for name, avg in (("full_addition", 0.41), ("selective", 0.44), ("selective_reflection", 0.45)):
        write_run(root, "reme_table3", "bfcl", "reme", name, 0, at_k([avg] * 3, [0.65] * 3))
    write_run(
        root, "reme_table4_32b", "bfcl", "reme", "summ_qwen3_32b", 0, at_k([0.48] * 3, [0.69] * 3)
    )
    for name, avg in (("key_task_query", 0.43), ("key_usage_scenario", 0.45)):
        write_run(root, "reme_table5", "bfcl", "reme", name, 0, at_k([avg] * 3, [0.66] * 3))
    for k, avg in ((0, 0.40), (5, 0.45), (10, 0.44)):
        write_run(root, "reme_fig4", "bfcl", "reme", f"k_{k}", 0, at_k([avg] * 3, [0.66] * 3))
    for seed in (0, 1):
        for method, rate in (("none", 0.30), ("reme", 0.40)):
            write_run(
                root,
                "reme_other_benchmarks",
                "pddl",
                method,
                None,
                seed,
                {
                    "success_rate": rate + 0.1 * seed,
                    "progress_rate": 0.5,
                    "avg_steps": 20,
                    "runs": 1,
                },
            )
    return root


def params(results: Path, out: Path) -> str:
    return (
        f"RESULTS_DIR = {str(results)!r}\nOUT_DIR = {str(out)!r}\n"
        'FIG5_VARIANT = "dynamic"\nFIG5_REPETITION = 0\n'
    )


def test_notebook_on_empty_results(tmp_path):
    out = tmp_path / "out"
    nb = run_notebook(REME_NB, params(tmp_path / "no_results", out))
    text = notebook_text(nb)
    for experiment in (
        "reme_table1",
        "reme_table1_dynamic",
        "reme_table3",
        "reme_table4_14b",
        "reme_table4_32b",
        "reme_fig4",
    ):
        assert f"python run.py -m experiment={experiment} backbone=<preset>" in text
    assert "experiment=reme_table3 backbone=<preset>   # after the reme_table1 runs" in text
    assert "experiment=reme_table4 " not in text  # the old single Table 4 file is gone
    t1 = pd.read_csv(out / "table1.csv")
    assert len(t1) == 15 and (t1["BFCL-V3 Avg@4 ours"] == rr.NOT_RUN).all()
    row = t1[(t1["model"] == "qwen3-8b") & (t1["variant"] == "dynamic")].iloc[0]
    assert row["BFCL-V3 Avg@4 paper"] == "45.17 ± 0.36"
    assert float(row["Avg Pass@4 paper"]) == 55.03
    assert len(pd.read_csv(out / "table5.csv")) == 12
    fig4 = pd.read_csv(out / "fig4.csv")
    assert list(fig4["K"]) == [5, 5, 5] and list(fig4["Avg@4 paper"]) == [44.50, 51.89, 56.05]
    overlap = pd.read_csv(out / "fig5a_overlap.csv")
    assert len(overlap) == 1 and overlap.iloc[0]["only_base"] == 17
    for png in ("fig3_retrieval_keys.png", "fig4_top_k.png", "fig5_failures.png"):
        assert (out / png).read_bytes()[:8] == PNG


def test_notebook_on_fake_results(tmp_path):
    results, out = build_fake_tree(tmp_path / "results"), tmp_path / "out"
    run_notebook(REME_NB, params(results, out))
    t1 = pd.read_csv(out / "table1.csv")
    ours = t1[t1["ours_backbone"] == BB].set_index("variant")
    assert ours.loc["none", "BFCL-V3 Avg@4 ours"] == "41.00 ± 0.82 (n=3)"
    assert ours.loc["none", "BFCL-V3 Pass@4 ours"] == "60.00 ± 1.63 (n=3)"
    assert ours.loc["dynamic", "BFCL-V3 Avg@4 ours"] == "47.00 ± 0.00 (n=3)"
    assert ours.loc["amem", "BFCL-V3 Avg@4 ours"] == rr.NOT_RUN
    assert ours.loc["reme", "AppWorld Avg@4 ours"] == rr.NOT_RUN
    t2 = pd.read_csv(out / "table2.csv")
    traj = t2[(t2["model"] == "qwen3-8b") & (t2["variant"] == "trajectory")].iloc[0]
    assert traj["Avg@4 ours"] == "42.00 ± 0.00 (n=3)" and traj["Avg@4 Δ ours"] == pytest.approx(1.0)
    assert traj["Avg@4 Δ paper"] == 2.67
    t3 = pd.read_csv(out / "table3.csv").set_index("variant")
    assert t3.loc["full_addition", "Avg@4 ours"] == "41.00 ± 0.00 (n=3)"
    assert t3.loc["dynamic", "Avg@4 ours"] == "47.00 ± 0.00 (n=3)"  # from reme_table1
    t4 = pd.read_csv(out / "table4.csv").set_index("variant")
    assert t4.loc["summ_qwen3_32b", "Avg@4 Δ ours"] == pytest.approx(3.0)
    assert t4.loc["summ_qwen3_14b", "Avg@4 ours"] == rr.NOT_RUN
    fig4 = pd.read_csv(out / "fig4.csv")
    mine = fig4[fig4["backbone"] == BB]
    assert list(mine["K"]) == [0, 5, 10]
    assert mine[mine["K"] == 5].iloc[0]["Avg@4 paper"] == 44.50
    overlap = pd.read_csv(out / "fig5a_overlap.csv")
    row = overlap[overlap["who"].str.startswith("ours")].iloc[0]
    assert (row["n_failed_base"], row["n_failed_variant"]) == (6, 3)
    assert (row["only_base"], row["both"], row["only_variant"]) == (4, 2, 1)
    fixed = pd.read_csv(out / "fig5a_overlap_fixed.csv").iloc[0]
    assert (fixed["only_base"], fixed["both"], fixed["only_variant"]) == (5, 1, 0)
    cats = pd.read_csv(out / "fig5b_categories.csv").set_index("category")
    assert cats["none"].to_dict() == {
        "action omission (empty turn)": 1,
        "multi_turn:something_new": 0,
        "state mismatch (wrong or missing action)": 2,
        rr.STEP_LIMIT: 1,
        "wrong call order": 1,
        "wrong response": 1,
    }
    assert cats.loc["state mismatch (wrong or missing action)", "dynamic"] == 2
    assert cats.loc["multi_turn:something_new", "dynamic"] == 1
    cost = pd.read_csv(out / "cost.csv").set_index("variant")
    assert cost.loc["reme", "acquisition_llm_calls_per_task"] == 12.0
    assert cost.loc["reme", "tokens/summarize"] == 1500 and cost.loc["reme", "calls/judge"] == 100
    assert cost.loc["dynamic", "memory_deleted"] == 7
    readings = pd.read_csv(out / "dynamic_readings.csv").set_index("variant")
    # a run that did not count retries: its counted numbers are its first attempts
    dynamic = readings.loc["dynamic"]
    assert dynamic["Avg@k counted"] == dynamic["Avg@k first attempt"]
    assert cost.loc["reme", "memory_fallbacks"] == 3  # json_invalid + reme_summarize
    assert cost.loc["reme", "memory_fallback_rate"] == 0.0075
    other = pd.read_csv(out / "other_benchmarks.csv").set_index("variant")
    assert other.loc["reme", "success_rate"] == "45.00 ± 5.00 (n=2)"
    assert other.loc["reme", "success_gain_pp"] == pytest.approx(10.0)
    for png in ("fig3_retrieval_keys.png", "fig4_top_k.png", "fig5_failures.png"):
        assert (out / png).read_bytes()[:8] == PNG


def test_long_metrics_and_summary(tmp_path):
    results = build_fake_tree(tmp_path / "r")
    assert rr.load_runs(tmp_path / "nothing", "table1").empty
    runs = rr.load_runs(results, "table3")
    assert sorted(runs["variant_key"]) == [
        "dynamic",
        "full_addition",
        "selective",
        "selective_reflection",
    ]
    # reme_table1's No Memory / ReMe (fixed) runs are the base rows of Tables 2 and 4 and,
    # with ReMe (dynamic), Figure 5's runs: what their configs declare
    variants = {s: sorted(rr.load_runs(results, s)["variant_key"]) for s in rr.SECTIONS}
    assert variants["table2"] == ["none", "reme", "trajectory"]
    assert variants["table4"] == ["none", "reme", "summ_qwen3_32b"]
    assert variants["fig5"] == ["dynamic", "none", "reme"]
    with pytest.raises(ValueError, match="'table9' is not a reme report section"):
        rr.load_runs(results, "table9")
    long = rr.long_metrics(rr.load_runs(results, "table1"))
    none = long[(long["variant"] == "none") & (long["metric"] == "avg_at_4")]
    assert sorted(none["value"]) == pytest.approx([40.0, 41.0, 42.0])
    s = rr.summarize(long).set_index(["variant", "metric"])
    assert s.loc[("none", "avg_at_4"), "std"] == pytest.approx((2 / 3) ** 0.5)
    assert s.loc[("none", "avg_at_4"), "n"] == 3
    # a run without repetitions (k = 1): Avg@1 = Pass@1 = success rate; one value, no std
    one = rr.summarize(rr.long_metrics(rr.load_runs(results, "other")))
    one = one[(one["metric"] == "avg_at_1") & (one["variant"] == "none")].iloc[0]
    assert one["mean"] == pytest.approx(35.0) and one["n"] == 2
    assert rr.cell(44.5, 0.851) == "44.50 ± 0.85" and rr.cell(44.5) == "44.50"
    assert rr.cell(None) == rr.NOT_RUN


def test_sections_read_the_declared_membership(tmp_path, capsys):
    """A run feeds a section because its metrics.json declares it, whatever its experiment
    name: an undeclared run of reme_table3 is in no section, a run of another experiment
    that declares ReMe's table3 is in Table 3."""
    results = tmp_path / "results"
    write_run(
        results,
        "reme_table3",
        "bfcl",
        "reme",
        "selective",
        0,
        at_k([0.44] * 3, [0.65] * 3),
        report=False,
    )
    runs = rr.load_runs(results, "table3")
    assert runs.empty and not rr.report_missing(runs, "table3")
    hint = capsys.readouterr().out
    assert "no results for reme table3 yet" in hint
    assert "python run.py -m experiment=reme_table3 backbone=<preset>" in hint
    mine = {"paper": "reme", "tables": ["table3"]}
    write_run(
        results,
        None,
        "bfcl",
        "reme",
        "full_addition",
        0,
        at_k([0.41] * 3, [0.60] * 3),
        experiment="my_refinement_sweep",
        report=mine,
    )
    # another paper's table3, and ReMe's other tables, are not ReMe's Table 3
    for method, ablation, report in (
        ("reme", "selective_reflection", {"paper": "memco", "tables": ["table3"]}),
        ("none", None, {"paper": "reme", "tables": ["table1", "table2"]}),
    ):
        write_run(
            results,
            None,
            "bfcl",
            method,
            ablation,
            0,
            at_k([0.5] * 3, [0.7] * 3),
            experiment="reme_table3",
            report=report,
        )
    runs = rr.load_runs(results, "table3")
    assert list(runs["experiment"]) == ["my_refinement_sweep"]
    assert list(runs["variant_key"]) == ["full_addition"]
    assert rr.report_missing(runs, "table3") and capsys.readouterr().out == ""
    t3 = rr.beside_paper(rr.summarize(rr.long_metrics(runs)), "table3").set_index("variant")
    assert t3.loc["full_addition", "Avg@4 ours"] == "41.00 ± 0.00 (n=3)"
    assert t3.loc["selective", "Avg@4 ours"] == rr.NOT_RUN
    assert list(rr.load_runs(results, "table1")["variant_key"]) == ["none"]


def test_undeclared_tree_feeds_no_section(tmp_path):
    """The fake tree with the report node removed from every metrics.json (results written
    before the pipeline declared membership) feeds no section."""
    results = build_fake_tree(tmp_path / "r")
    assert all(not rr.load_runs(results, s).empty for s in rr.SECTIONS)
    for path in results.glob("**/metrics.json"):
        data = json.loads(path.read_text())
        del data["report"]
        path.write_text(json.dumps(data))
    assert all(rr.load_runs(results, s).empty for s in rr.SECTIONS)


def test_table1_puts_appworld_beside_bfcl_and_averages_them(tmp_path):
    """The AppWorld rows (``reme_table1_appworld``, same experiment name) fill Table 1's AppWorld
    column, and the Avg column is the mean of the two benchmarks, as the paper's."""
    results = tmp_path / "r"
    write_run(results, "reme_table1", "bfcl", "reme", None, 0, at_k([0.44, 0.46], [0.7, 0.6]))
    write_run(
        results, "reme_table1_appworld", "appworld", "reme", None, 0, at_k([0.2, 0.3], [0.4, 0.4])
    )
    write_run(results, "reme_table1_appworld", "appworld", "none", None, 0, at_k([0.1], [0.2]))
    summary = rr.summarize(rr.long_metrics(rr.load_runs(results, "table1")))
    t1 = rr.table1(summary)
    ours = t1[t1["ours_backbone"] == BB].set_index("variant")
    assert ours.loc["reme", "BFCL-V3 Avg@4 ours"] == "45.00 ± 1.00 (n=2)"
    assert ours.loc["reme", "AppWorld Avg@4 ours"] == "25.00 ± 5.00 (n=2)"
    assert ours.loc["reme", "Avg Avg@4 ours"] == "35.00"  # (45 + 25) / 2, no std
    assert ours.loc["reme", "Avg Pass@4 ours"] == "52.50"  # (65 + 40) / 2
    assert ours.loc["none", "AppWorld Pass@4 ours"] == "20.00 (n=1)"
    assert ours.loc["none", "Avg Avg@4 ours"] == rr.NOT_RUN  # no BFCL-V3 run of it
    assert ours.loc["reme", "AppWorld Avg@4 paper"] != rr.NOT_RUN


def test_hints_name_the_declaring_configs():
    """Each section's hint lists the experiment configs that declare it, acquisition first."""
    names = {s: [c.name for c in declaring_configs("reme", s)] for s in rr.SECTIONS}
    assert names["table1"] == [
        "reme_table1",
        "reme_table1_appworld",
        "reme_table1_released_pool",  # nothing to run first: a released file, or its own pool
        "reme_table1_appworld_dynamic",
        "reme_table1_dynamic",
    ]
    assert names["table3"] == ["reme_table1_dynamic", "reme_table3"]
    assert names["table4"] == ["reme_table1", "reme_table4_14b", "reme_table4_32b"]
    assert names["fig5"] == ["reme_table1", "reme_table1_dynamic"]
    assert rr.command_for("table2") == (
        "python run.py -m experiment=reme_table1 backbone=<preset>; "
        "python run.py -m experiment=reme_table2 backbone=<preset>"
    )


def test_failure_category_mapping():
    def category(*args, **kwargs) -> str:
        return rr.failure_category(EpisodeRecord.from_json(episode("t", 0, 0, *args, **kwargs)))

    assert category(False, STATE).startswith("state mismatch")
    assert category(False, STATE, turns_done=2) == rr.STEP_LIMIT
    assert category(False, STATE, status="budget") == rr.STEP_LIMIT
    force_terminated = "multi_turn:force_terminated"
    assert category(False, force_terminated, turns_done=2) == rr.STEP_LIMIT
    # every turn played: a turn without calls was left out (env.empty_turns=drop)
    assert category(False, force_terminated) == rr.OMISSION
    assert category(False, None, status="error") == "episode error"
    assert category(False, "x:y") == "x:y"
    assert category(False, None) == "unknown"
    assert rr.k_of("k_10") == 10 and rr.k_of("key_keywords") is None


def test_paper_numbers_csv():
    df = paper_numbers("reme")
    assert tuple(df.columns) == COLUMNS
    assert df["source"].str.match(r"^(L\d+|derived: )").all()
    assert not df.duplicated(["table", "setting", "backbone", "variant", "metric"]).any()
    key = df.set_index(["table", "setting", "backbone", "variant", "metric"])["value"]
    assert key[("table1", "bfcl", "qwen3-8b", "dynamic", "avg_at_4")] == 45.17
    assert key[("table1", "bfcl", "qwen3-8b", "dynamic", "avg_at_4_std")] == 0.36
    assert key[("table1", "appworld", "qwen3-32b", "dynamic", "pass_at_4_std")] == 0.28
    assert key[("table1", "avg", "qwen3-14b", "dynamic", "pass_at_4")] == 63.71
    assert key[("table2", "bfcl", "qwen3-14b", "trajectory", "pass_at_4_gain_vs_none")] == 1.11
    assert key[("table3", "bfcl", "qwen3-8b", "selective_reflection", "avg_at_4")] == 45.00
    assert key[("table4", "bfcl", "qwen3-8b", "summ_qwen3_32b", "avg_at_4_delta_vs_reme")] == 3.33
    assert key[("table5", "bfcl", "qwen3-32b", "key_keywords", "avg_at_4")] == 56.89
    assert key[("fig5", "bfcl", "qwen3-8b", "reme", "n_failed")] == 47
    assert key[("fig5", "bfcl", "qwen3-8b", "none", "n_failed_reasoning_error")] == 22
    t1 = df[df["table"] == "table1"]
    assert len(t1) == 3 * 5 * (4 + 4 + 2)
    # the Avg columns are the mean of BFCL-V3 and AppWorld (to rounding)
    for (bb, variant), grp in t1.groupby(["backbone", "variant"]):
        v = grp.set_index(["setting", "metric"])["value"]
        for m in ("avg_at_4", "pass_at_4"):
            assert v[("avg", m)] == pytest.approx(
                (v[("bfcl", m)] + v[("appworld", m)]) / 2, abs=0.011
            ), (bb, variant, m)
    # Table 2's gaps are to Table 1's No Memory (one misprint, noted in its source)
    for bb in ("qwen3-8b", "qwen3-14b"):
        base = key[("table1", "bfcl", bb, "none", "avg_at_4")]
        for variant in ("trajectory", "reme"):
            gap = key[("table2", "bfcl", bb, variant, "avg_at_4_gain_vs_none")]
            if (bb, variant) == ("qwen3-14b", "reme"):  # the paper's +4.23 for 51.89 - 48.66
                gap -= 1
            assert key[("table2", "bfcl", bb, variant, "avg_at_4")] == pytest.approx(base + gap)
    # Table 4's deltas are to its first row (LLM_summ = LLM_execute)
    for variant in ("summ_qwen3_14b", "summ_qwen3_32b"):
        for m in ("avg_at_4", "pass_at_4"):
            delta = key[("table4", "bfcl", "qwen3-8b", variant, f"{m}_delta_vs_reme")]
            first = key[("table4", "bfcl", "qwen3-8b", "reme", m)]
            assert key[("table4", "bfcl", "qwen3-8b", variant, m)] == pytest.approx(first + delta)
    # Figure 5: 62 - 17 = 47 - 2 = both
    f5 = {
        m: key[("fig5", "bfcl", "qwen3-8b", "reme", m)]
        for m in ("n_failed", "n_only_none_failed", "n_only_reme_failed", "n_both_failed")
    }
    assert 62 - f5["n_only_none_failed"] == f5["n_failed"] - f5["n_only_reme_failed"] == 45


def test_repetition_from_run_number(tmp_path):
    """Episodes without ``repetition`` belong to repetition run // k."""
    eps = [episode("a", run, 0, run == 5) for run in range(8)]
    for e in eps:
        del e["repetition"]
    run_dir = write_run(tmp_path, "reme_table1", "bfcl", "none", None, 0, at_k([0.1], [0.1]), eps)
    assert rr.failed_tasks(rr.task_outcomes(run_dir, 0, 4)) == {"a"}
    assert rr.failed_tasks(rr.task_outcomes(run_dir, 1, 4)) == set()
    assert len(rr.task_outcomes(run_dir, 0)["a"]) == 8  # k unknown: all in repetition 0


REME_EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("reme_*.yaml"))


@pytest.mark.parametrize("experiment", REME_EXPERIMENTS)
def test_reme_experiment_sweep_cells_compose(experiment):
    """Every cell of a ReMe experiment's sweep composes and resolves (test_config.py composes
    each experiment without its sweep)."""
    import itertools

    from omegaconf import OmegaConf

    from conftest import compose_cfg

    text = OmegaConf.load(ROOT / "conf" / "experiment" / f"{experiment}.yaml")
    assert "experiment_name" in text and str(text.experiment_name).startswith("reme_")
    params = OmegaConf.select(text, "hydra.sweeper.params") or {}
    grid = [[f"{k}={v}" for v in str(vals).split(",")] for k, vals in params.items()]
    for cell in itertools.product(*grid):
        cfg = compose_cfg([f"experiment={experiment}", *cell])
        OmegaConf.resolve(cfg)
        assert cfg.experiment_name == text.experiment_name
        assert cfg.report.paper == "reme" and set(cfg.report.tables) <= set(rr.SECTIONS)
        if str(cfg.ablation.name).startswith("released_pool"):  # the backbone's released file
            stem = f"bfcl_{cfg.backbone.name.replace('-', '_')}.jsonl"
            assert cfg.protocol.snapshot_from.endswith(f"/released/{stem}")
        elif cfg.protocol.snapshot_from:
            assert cfg.protocol.snapshot_from == "reme_table1"
        if cfg.env.name == "bfcl":
            assert cfg.protocol.runs == 4


def test_a_mem_full_mode_is_the_papers_a_mem_row(tmp_path):
    """``method=amem`` writes ``amem_full/``; Table 1 puts it on the paper's A-Mem row."""
    write_run(tmp_path, "reme_table1", "bfcl", "amem_full", None, 0, at_k([0.3], [0.5]))
    runs = rr.load_runs(tmp_path, "table1")
    assert list(runs["variant_key"]) == ["amem"] and list(runs["method"]) == ["amem_full"]
    table = rr.beside_paper(rr.summarize(rr.long_metrics(runs)), "table1")
    mine = table[(table["variant"] == "amem") & table["model"].astype(str).str.contains(BB)]
    assert len(mine) == 1


def _trial(task, run, success, attempt=None) -> dict:
    return {**episode(task, run, 0, success), "repetition": None,
            **({"attempt": attempt} if attempt is not None else {})}  # fmt: skip


def test_dynamic_readings_count_the_last_trial_and_recompute_first_attempts(tmp_path):
    # an official run (count_retries): task a fails, then succeeds on retry 1 in run 0; task b
    # succeeds on retry 2 in run 1; the episode records are the last trials, the first attempts
    # are in reflections.jsonl as attempt 0
    counted = [_trial("a", 0, True, 1), _trial("a", 1, True), _trial("b", 0, False),
               _trial("b", 1, True, 2)]  # fmt: skip
    retries = [_trial("a", 0, False, 0), _trial("a", 0, True, 1), _trial("b", 1, False, 0),
               _trial("b", 1, False, 1), _trial("b", 1, True, 2)]  # fmt: skip
    metrics = {**at_k([0.75], [1.0]), "runs": 2}
    run_dir = write_run(
        tmp_path, "reme_table1_dynamic", "bfcl", "reme", "dynamic", 0, metrics, counted
    )
    (run_dir / "reflections.jsonl").write_text("".join(json.dumps(r) + "\n" for r in retries))
    (run_dir / "config.yaml").write_text(
        "protocol:\n  count_retries: true\n  memory_across_runs: true\n"
    )
    firsts = rr.first_attempts(run_dir)
    assert [(e.task_id, e.run, e.success, e.attempt) for e in firsts] == [
        ("a", 0, False, 0), ("a", 1, True, None), ("b", 0, False, None), ("b", 1, False, 0)
    ]  # fmt: skip
    (row,) = rr.dynamic_readings(rr.load_runs(tmp_path, "table1")).to_dict("records")
    assert (row["variant"], row["count_retries"], row["memory_across_runs"]) == (
        "dynamic",
        True,
        True,
    )
    # counted: run 0 solves a (1 of 2), run 1 both -> Avg@2 = 0.75, Pass@2 = 1.0;
    # first attempts: run 0 none, run 1 a -> Avg@2 = 0.25, Pass@2 = 0.5
    assert (row["Avg@k counted"], row["Pass@k counted"]) == (75.0, 100.0)
    assert (row["Avg@k first attempt"], row["Pass@k first attempt"]) == (25.0, 50.0)
    assert "dynamic_memarena" in rr.TABLE_VARIANTS["table1"]
    assert rr.dynamic_readings(pd.DataFrame()).empty


def test_the_memarena_reading_is_its_own_row_of_tables_1_and_3(tmp_path):
    for ablation, avg in (("dynamic", 0.47), ("dynamic_memarena", 0.43)):
        write_run(tmp_path, "reme_table1_dynamic", "bfcl", "reme", ablation, 0,
                  at_k([avg] * 3, [0.66] * 3))  # fmt: skip
    for table in ("table1", "table3"):
        runs = rr.load_runs(tmp_path, table)
        summary = rr.summarize(rr.long_metrics(runs))
        frame = rr.table1(summary) if table == "table1" else rr.beside_paper(summary, table)
        ours = frame[frame["ours_backbone"] == BB].set_index("variant")
        column = "BFCL-V3 Avg@4 ours" if table == "table1" else "Avg@4 ours"
        assert ours.loc["dynamic", column] == "47.00 ± 0.00 (n=3)"
        assert ours.loc["dynamic_memarena", column] == "43.00 ± 0.00 (n=3)"
        assert ours.loc["dynamic_memarena", "method"] == "ReMe (dynamic), memarena's reading"
