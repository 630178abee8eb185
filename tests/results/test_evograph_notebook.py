"""notebooks/evograph.ipynb on an empty results dir and on a small hand-built results tree in the
pipeline's layout and keys (Table 1, Figure 3 cells, ``memory_token_usage`` per purpose and an
EvoGraph-Mem memory snapshot; Tables 1 and 2 on runs the pipeline really wrote are in
test_notebooks_real_runs.py), plus unit tests of memarena.reports.evograph.tables and the
paper's stated numbers."""

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, notebook_text, run_notebook
from memarena.reports.common import declaring_configs, experiment_configs, purpose_calls
from memarena.reports.evograph import figures as ef
from memarena.reports.evograph import tables as er
from memarena.reports.paper import paper_numbers

EVOGRAPH_NB = ROOT / "notebooks" / "evograph.ipynb"
PNG = b"\x89PNG\r\n\x1a\n"
ENVS = {"pddl": "pddl", "hotpotqa": "hotpotqa_distractor", "fever": "fever_official"}
CONFIGS = {c.name: c for c in experiment_configs()}  # conf/experiment/*.yaml


def write_run(root, config, env, method, ablation, backbone, seed, metrics) -> Path:
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


def run_metrics(score: float, tokens: float, memory_tokens: int = 0, **extra) -> dict:
    return {
        "success_rate": score,
        "progress_rate": score + 0.1,
        "avg_steps": 5.0,
        "n_episodes": 10,
        "tokens_per_task": tokens,
        "memory_tokens": memory_tokens,
        **extra,
    }


def usage(prompt_tokens: int, completion_tokens: int, calls: int = 2) -> dict:
    """One purpose of metrics.json ``memory_token_usage`` as the pipeline writes it."""
    return {
        "calls": calls,
        "requests": calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
    }


def insight(iid, version, parent, active, content, pos, neg, trace):
    return {
        "id": iid,
        "content": content,
        "pos": pos,
        "neg": neg,
        "active": active,
        "version": version,
        "parent": parent,
        "created_at": version,
        "trace": trace,
    }


SNAPSHOT_STATE = {
    "insights": [
        insight(
            "i0",
            1,
            None,
            False,
            "Verify claims by consulting multiple sources.",
            ["q1"],
            ["q2"],
            [
                {"query": "q1", "op": "ADD", "detail": "new"},
                {"query": "q2", "op": "REVISE", "detail": "over-general"},
            ],
        ),
        insight(
            "i1",
            2,
            "i0",
            False,
            "Verify claims by cross-referencing sources.",
            ["q1", "q2"],
            ["q3"],
            [{"query": "q3", "op": "REVISE", "detail": "needs context"}],
        ),
        insight(
            "i2",
            3,
            "i1",
            True,
            "Verify claims by cross-referencing sources in context.",
            ["q1", "q2", "q3"],
            [],
            [{"query": "q4", "op": "KEEP", "detail": "helped"}],
        ),
        insight(
            "j0",
            1,
            None,
            True,
            "Pick up both balls first.",
            ["p1"],
            [],
            [{"query": "p1", "op": "ADD", "detail": "new"}],
        ),
    ],
    "edges": [["i0", "j0", "q1"], ["j0", "i2", "q3"]],
}


def build_fake_tree(root: Path) -> Path:
    for bb, boost in (("gpt-4o-mini", 0.0), ("qwen2.5-7b", -0.05)):  # the presets' names
        for seed in (0, 1):
            d = 0.01 * seed + boost
            for setting, env in ENVS.items():
                for method, (score, tokens) in {
                    "none": (0.30, 1000.0),
                    "gmemory": (0.40, 1600.0),
                    "evograph": (0.44, 1700.0),
                }.items():
                    extra = {}
                    if method == "evograph":
                        extra = {
                            "memory_token_usage": {
                                "controller": usage(300, 100),
                                "key_steps": usage(500, 100),
                            }
                        }
                    run_dir = write_run(
                        root,
                        f"evograph_table1_{setting}",
                        env,
                        method,
                        None,
                        bb,
                        seed,
                        run_metrics(score + d, tokens, 500 if method != "none" else 0, **extra),
                    )
                    if method == "evograph" and setting == "fever" and seed == 0 and not boost:
                        (run_dir / "memory").mkdir()
                        (run_dir / "memory" / "memory.json").write_text(
                            json.dumps(
                                {"method": "evograph", "schema_version": 1, "state": SNAPSHOT_STATE}
                            )
                        )
                for variant, score in (
                    ("add_keep", 0.40),
                    ("add_keep_archive", 0.42),
                    ("all", 0.44),
                ):
                    write_run(
                        root,
                        "evograph_fig3",
                        env,
                        "evograph",
                        variant,
                        bb,
                        seed,
                        run_metrics(score + d, 1700.0),
                    )
    return root


def params(results: Path, out: Path, case: Path | None = None) -> str:
    return (
        f"RESULTS_DIR = {str(results)!r}\nOUT_DIR = {str(out)!r}\n"
        f"CASE_RUN_DIR = {str(case) if case else None!r}\nCASE_INSIGHT = None\n"
    )


def test_notebook_on_empty_results(tmp_path):
    out = tmp_path / "out"
    nb = run_notebook(EVOGRAPH_NB, params(tmp_path / "no_results", out))
    text = notebook_text(nb)
    for section in er.SECTIONS:  # each section's hint names the configs that declare it
        for config in declaring_configs("evograph", section):
            assert f"  {config.command}" in text
    assert "python run.py -m experiment=evograph_table1_hotpotqa backbone=<preset>" in text
    assert er.command_for("table1") in text  # the case study
    assert "no EvoGraph-Mem memory snapshot found" in text
    gains = pd.read_csv(out / "table1_gains.csv")
    assert sorted(gains["paper_gain_pct"]) == [5.03, 10.44, 11.38, 21.75]
    t2 = pd.read_csv(out / "table2.csv")
    assert set(t2["paper_change_pct_vs_none"].dropna()) == {73.0, 72.7}
    fig3 = pd.read_csv(out / "fig3.csv")
    assert (fig3["ours"] == "-").all() and len(fig3) == 14
    assert (out / "fig3_ablation.png").read_bytes()[:8] == PNG
    assert not (out / "fig2_case_study.png").exists()


def test_notebook_on_fake_results(tmp_path):
    results, out = build_fake_tree(tmp_path / "results"), tmp_path / "out"
    nb = run_notebook(EVOGRAPH_NB, params(results, out))
    t1 = pd.read_csv(out / "table1.csv")
    assert list(t1.columns[-5:]) == ["none", "gmemory", "evograph", "n_tasks", "flags"]
    assert set(t1["setting"]) == {"pddl", "hotpotqa", "fever"}
    assert set(t1[t1["setting"] == "pddl"]["metric"]) == {"progress"}
    gains = pd.read_csv(out / "table1_gains.csv")
    row = gains[(gains["setting"] == "hotpotqa") & (gains["backbone"] == "gpt-4o-mini")].iloc[0]
    assert row["runner_up"] == "gmemory" and row["gain_pp"] == pytest.approx(4.0)
    assert row["paper_gain_pct"] == 21.75
    t2 = pd.read_csv(out / "table2.csv")
    evo = t2[(t2["variant"] == "evograph") & (t2["backbone"] == "gpt-4o-mini")].iloc[0]
    assert evo["change_pct_vs_none"] == pytest.approx(70.0)
    assert evo["paper_change_pct_vs_none"] == 73.0 and evo["paper_tokens_M"] == 6.4
    assert evo["controller_token_share_pct"] == pytest.approx(40.0)
    fig3 = pd.read_csv(out / "fig3.csv")
    cell = fig3[
        (fig3["setting"] == "pddl")
        & (fig3["variant"] == "add_keep_archive")
        & (fig3["backbone"] == "gpt-4o-mini")
    ].iloc[0]
    assert cell["paper"] == 34 and cell["n_seeds"] == 2
    assert (out / "fig3_ablation.png").read_bytes()[:8] == PNG
    versions = pd.read_csv(out / "case_study_versions.csv")
    assert list(versions["id"]) == ["i0", "i1", "i2"]
    assert list(versions["active"]) == [False, False, True]
    trace = pd.read_csv(out / "case_study_trace.csv")
    assert list(trace["op"]) == ["ADD", "REVISE", "REVISE", "KEEP"]
    assert (out / "fig2_case_study.png").read_bytes()[:8] == PNG
    assert "chain of 3 versions" in notebook_text(nb)


def test_long_metrics_and_summary(tmp_path):
    results = build_fake_tree(tmp_path / "r")
    assert er.load_runs(results.parent / "nothing", "table1").empty
    with pytest.raises(ValueError, match="'evograph_fig3' is not a evograph report section"):
        er.load_runs(results, "evograph_fig3")
    # Table 2 reads the Table 1 runs, which declare both
    assert len(er.load_runs(results, "table2")) == len(er.load_runs(results, "table1")) == 36
    runs = er.load_runs(results, "fig3")
    assert set(runs["variant_key"]) == set(er.FIG3_VARIANTS)
    assert set(runs["setting"]) == {"pddl", "hotpotqa", "fever"}
    s = er.summarize(er.long_metrics(runs))
    pddl = s[
        (s["setting"] == "pddl") & (s["variant"] == "all") & (s["backbone"] == "gpt-4o-mini")
    ].set_index("metric")
    assert pddl.loc["progress", "mean"] == pytest.approx(54.5)  # (0.54 + 0.55) / 2 in percent
    assert pddl.loc["progress", "std"] == pytest.approx(0.7071, abs=1e-4)
    assert "em" not in pddl.index
    fever = s[(s["setting"] == "fever") & (s["metric"] == "em")]
    assert not fever.empty


def test_purpose_tokens_and_shares():
    """Tokens per purpose are prompt + completion tokens of ``memory_token_usage/<purpose>``
    (calls and requests are not tokens; other usage keys are not the method's totals)."""
    row = {
        "memory_token_usage/controller/calls": 3,
        "memory_token_usage/controller/requests": 3,
        "memory_token_usage/controller/prompt_tokens": 30,
        "memory_token_usage/controller/completion_tokens": 10,
        "memory_token_usage/relevance/prompt_tokens": 50,
        "memory_token_usage/relevance/completion_tokens": 10,
        "memory_token_usage/key_steps/prompt_tokens": float("nan"),  # another run's purpose
        "eval_memory_usage/controller/prompt_tokens": 30,
    }
    assert er.purpose_tokens(row) == {"controller": 40, "relevance": 60}
    assert purpose_calls(row, "controller") == 3 and purpose_calls(row, "x") is None
    runs = pd.DataFrame(
        [
            {
                "experiment": "e",
                "env": "fever_official",
                "method": "evograph",
                "backbone": "b",
                "seed": 0,
                "success_rate": 0.5,
                "n_episodes": 4,
                "tokens_per_task": 100.0,
                "memory_tokens": 100,
                **row,
            }
        ]
    )
    long = er.long_metrics(runs).set_index("metric")["value"]
    assert long["em"] == 50.0 and long["memory_token_share_pct"] == 25.0
    assert long["controller_token_share_pct"] == pytest.approx(40.0)  # 40 / (40 + 60)


def test_stand_in_keeps_its_benchmarks_score():
    """``pddl_generated`` (embedded PDDL problems) stays its own setting but is scored by
    progress rate, as PDDL is; stand-in FEVER by exact match."""
    ids = {"experiment": "e", "method": "none", "backbone": "b", "seed": 0}
    scores = {"success_rate": 0.25, "progress_rate": 0.5}
    runs = pd.DataFrame(
        [{**ids, "env": env, **scores} for env in ("pddl_generated", "fever_smoke")]
    )
    long = er.long_metrics(runs).set_index(["setting", "metric"])["value"]
    assert long[("pddl_generated", "progress")] == 50.0
    assert long[("fever_smoke", "em")] == 25.0
    assert er.score_of("pddl") == er.score_of("pddl_generated") == "progress"


def test_gains_and_table2():
    summary = pd.DataFrame(
        {
            "setting": ["pddl"] * 3 + ["fever"] * 3 + ["pddl"] * 3,
            "backbone": ["b"] * 9,
            "variant": ["none", "gmemory", "evograph"] * 3,
            "metric": ["progress"] * 3 + ["tokens_per_task"] * 6,
            "mean": [20.0, 40.0, 50.0, 100.0, 150.0, 180.0, 300.0, 450.0, 500.0],
            "std": [float("nan")] * 9,
            "n_seeds": [1] * 9,
        }
    )
    g = er.gains(summary).iloc[0]
    assert g["runner_up"] == "gmemory" and g["gain_pp"] == 10.0
    assert g["gain_rel_pct"] == 25.0 and g["gain_rel_pct_vs_none"] == 150.0
    t2 = er.table2(summary).set_index("variant")
    assert list(t2.index) == ["none", "gmemory", "evograph"]
    assert t2.loc["evograph", "tokens_per_task"] == 340.0
    assert t2.loc["evograph", "change_pct_vs_none"] == 70.0
    assert t2.loc["none", "change_pct_vs_none"] == 0.0
    assert er.table2(er.summarize(er.long_metrics(pd.DataFrame()))).empty
    assert er.gains(er.summarize(er.long_metrics(pd.DataFrame()))).empty


def test_version_chain_and_tables(tmp_path):
    chain = er.version_chain(SNAPSHOT_STATE)
    assert [i["id"] for i in chain] == ["i0", "i1", "i2"]
    assert [i["id"] for i in er.version_chain(SNAPSHOT_STATE, "i1")] == ["i0", "i1", "i2"]
    assert [i["id"] for i in er.version_chain(SNAPSHOT_STATE, "j0")] == ["j0"]
    with pytest.raises(KeyError):
        er.version_chain(SNAPSHOT_STATE, "zz")
    assert er.version_chain({"insights": []}) == []
    v = er.versions_table(chain)
    assert list(v["n_pos"]) == [1, 2, 3] and list(v["n_neg"]) == [1, 1, 0]
    assert len(er.trace_table(chain)) == 4
    run = tmp_path / "run"
    (run / "memory").mkdir(parents=True)
    assert er.load_snapshot(run) is None
    (run / "memory" / "memory.json").write_text(
        json.dumps({"method": "evograph", "schema_version": 1, "state": SNAPSHOT_STATE})
    )
    assert er.load_snapshot(run)["edges"] == SNAPSHOT_STATE["edges"]
    assert er.find_snapshots(tmp_path) == [run / "memory"]
    path, _ = ef.figure_chain(chain, tmp_path / "out")
    assert path.read_bytes()[:8] == PNG


def test_paper_numbers_csv():
    df = paper_numbers("evograph")
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
    assert df["source"].str.match(r"^(L\d+|derived: )").all()
    key = df.set_index(["table", "setting", "backbone", "variant", "metric"])["value"]
    assert key[("table1_prose", "pddl", "gpt-4o-mini", "evograph", "progress_gain_pct")] == 10.44
    assert key[("table1_prose", "hotpotqa", "qwen2.5-7b", "evograph", "em_gain_pct")] == 5.03
    assert (
        key[("table2_prose", "all", "qwen2.5-7b", "evograph", "token_change_pct_vs_none")] == 72.7
    )
    assert key[("table2_prose", "all", "gpt-4o-mini", "gmemory", "tokens_M")] == 6.2
    assert key[("fig3", "fever", "qwen2.5-7b", "all", "em")] == 65
    assert key[("fig3", "pddl", "gpt-4o-mini", "add_keep_archive", "progress")] == 34
    # derived add+keep = full - stated gain, consistent with the values L178 states directly
    for setting, metric in (("hotpotqa", "em"), ("pddl", "progress"), ("fever", "em")):
        for bb in ("gpt-4o-mini", "qwen2.5-7b"):
            full = key[("fig3", setting, bb, "all", metric)]
            delta = key[("fig3", setting, bb, "add_keep", "delta_pp_vs_all")]
            assert key[("fig3", setting, bb, "add_keep", metric)] == full + delta
    derived = df[df["source"].str.startswith("derived")]
    assert len(derived) == 8
    assert not df.duplicated(["table", "setting", "backbone", "variant", "metric"]).any()
