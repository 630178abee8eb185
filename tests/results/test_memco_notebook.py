"""notebooks/memco.ipynb on an empty results dir and on a small hand-built results tree in the
pipeline's layout and keys (folder names, ``per_split``, ``global_records``; the Table 1 and 12
cells on runs the pipeline really wrote are in test_notebooks_real_runs.py), plus unit tests of
memarena.reports.memco.tables."""

import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT, notebook_text, run_notebook
from memarena.core.types import Feedback, Outcome, Step, Task, Trajectory
from memarena.memory.gmemory.prompts import PAST_SUCCESSES_HEADER
from memarena.memory.memco.base import GlobalRecord
from memarena.memory.memco.compose import HEADER as MEMCO_HEADER
from memarena.memory.memco.wilson import promotion_score
from memarena.reports.common import declaring_configs, experiment_configs
from memarena.reports.memco import figures as mf
from memarena.reports.memco import tables as mr
from memarena.reports.paper import paper_numbers
from memarena.results.records import EpisodeRecord

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
    for key in ("fig1bc", "fig6", "appJ"):  # Figures 1(b,c), 6 and Appendix J say what to run
        assert mf.MISSING[key] in text
    for name in ("fig1bc_alfworld_layouts", "fig6_case_study", "appJ_global_memory"):
        assert not (out / f"{name}.png").exists() and not (out / f"{name}.csv").exists()


def test_notebook_on_fake_results(tmp_path):
    results, out = build_fake_tree(tmp_path / "results"), tmp_path / "out"
    for seed in (0, 1):  # MemRL as released: no memory at evaluation, so ICL's prompts
        write_run(results, "memco_table1_alfworld", "alfworld", "memrl_as_released", None,
                  "qwen3-32b", seed, alfworld_metrics(0.62 + 0.01 * seed, 0.57, 20.0))  # fmt: skip
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
    beside = pd.read_csv(out / "table1_memrl_as_released_vs_icl.csv")  # expected to agree
    alfworld = beside[(beside["setting"] == "alfworld") & (beside["metric"] == "accuracy")]
    assert alfworld["difference"].tolist() == [2.0]
    assert set(t1["setting"]) == {"fever", "alfworld", "alfworld_familiar", "alfworld_heldout"}
    t11 = pd.read_csv(out / "table11.csv")
    row = t11[(t11["variant"] == "lambda_0.25") & (t11["metric"] == "global_records")]
    assert row["ours"].iloc[0] == "735.0 ± 0.0 (n=2)" and row["paper"].iloc[0] == 735
    t13 = pd.read_csv(out / "table13.csv")
    assert sorted(t13["step_budget"].unique()) == [10, 30, 50]
    assert set(t13["variant"]) == {"icl", "memco"}
    paired = pd.read_csv(out / "appH_paired.csv")
    assert set(paired["baseline"]) == {"icl", "memrl_as_released", "gmemory"}
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


# --------------------------------------------------------------------------------------------
# Figure 1(b,c), Figure 6 (case study) and Appendix J (PDDL memory structures)

BB = "qwen3-32b"
FAMILIAR, HELDOUT = "alfworld/kitchen/valid_seen/", "alfworld/kitchen/valid_unseen/"


def episode(task_id: str, success: bool, steps: list[tuple[str, str]], agent=None, run=0):
    """An episode record as the pipeline writes it with ``protocol.record_prompts=true``:
    ``steps`` are (action, memory text in the step's single user message)."""
    split = "valid_seen" if "valid_seen" in task_id else "valid_unseen"
    task = Task(
        task_id, "alfworld", split, task_id.split("/")[1], "put a clean cloth in countertop"
    )
    traj = Trajectory(task, "You are in the middle of a room.")
    for k, (action, memory) in enumerate(steps):
        prompt = [
            {"role": "system", "content": "Interact with a household."},
            {"role": "user", "content": f"{memory}\n\nYour task: {task.goal}\n\n> step {k}"},
        ]
        fb = Feedback(
            valid_action=k != 1,
            state_changed=k != 1,
            failure_label="invalid_action" if k == 1 else None,
        )
        # where the prompt builder put the memory (Step.memory_spans)
        spans = [{"message": 1, "slot": "memory", "start": 0, "end": len(memory)}]
        traj.steps.append(
            Step(action, f"obs {k} of {action}", 0.0, 0.0, fb, prompt=prompt,
                 memory_ids=[f"id{k}"], memory_spans=spans if memory else None)
        )  # fmt: skip
    outcome = Outcome(
        success, 1.0 if success else 0.5, len(steps), "success" if success else "budget"
    )
    return EpisodeRecord.of(traj, outcome, run=run, agent=agent).to_json()


def write_episodes(run_dir: Path, records: list[dict]) -> None:
    (run_dir / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def memco_memory(agent: str, k: int) -> str:
    return f"{MEMCO_HEADER}\nCurrent state: {agent} step {k}\nLocal memory: clean before store"


GMEM_MEMORY = f"{PAST_SUCCESSES_HEADER}\nTask: put a cloth in countertop (Resolved)"


def saved_state() -> dict:
    """A MemCo PDDL snapshot's state as MemCo.state_dict writes it: two agents' local graphs
    (LocalGraph.to_dict: state / action nodes, act / result / delta edges) and two promoted
    global records (GlobalRecord.to_dict)."""

    def graph(name: str) -> dict:
        x0, a0, x1 = "state:start", f"action:pick {name}", f"state:holding {name}"
        edge = {
            "count": 2,
            "progressed": 1,
            "stalled": 0,
            "success": 1,
            "labels": {},
            "payload": {"t": 0, "action": f"pick {name}"},
        }
        return {
            "similarity_threshold": 0.5,
            "episodes": ["e0", "e1"],
            "nodes": [
                {"id": x0, "type": "state", "content": "start", "visits": 2},
                {"id": a0, "type": "action", "content": f"pick {name}", "visits": 2},
                {"id": x1, "type": "state", "content": f"holding {name}", "visits": 1},
            ],
            "edges": [
                {"source": x0, "target": a0, "key": "act", "relation": "act", **edge},
                {"source": a0, "target": x1, "key": "result", "relation": "result", **edge},
                {
                    "source": x0,
                    "target": x1,
                    "key": f"delta:pick {name}",
                    "relation": f"delta:pick {name}",
                    **edge,
                },
            ],
        }

    records = [
        GlobalRecord(
            "g:workflow:1",
            "workflow",
            "holding X",
            ("pick X", "drop X"),
            "progress",
            n_pos=9,
            n_neg=1,
            n_stall=0,
            score=promotion_score(9, 1),
            rho=0.9,
            sources=["blocksworld", "gripper"],
            text="pick then drop",
        ),
        GlobalRecord(
            "g:precondition:2",
            "precondition",
            "hand empty",
            ("pick X",),
            "progress",
            n_pos=6,
            n_neg=0,
            n_stall=1,
            score=promotion_score(6, 0),
            rho=1.0,
            sources=["gripper"],
            text="pick needs an empty hand",
        ),
    ]
    return {
        "env": "pddl",
        "agents": {
            a: {"graph": graph(a), "records": [], "occurrences": {}}
            for a in ("blocksworld", "gripper")
        },
        "global": {
            "rule": "wilson",
            "alpha": 0.05,
            "threshold": 0.35,
            "diagnostics": {},
            "records": [r.to_dict() for r in records],
        },
    }


def build_figure_tree(root: Path, state: dict | None = None) -> Path:
    """The fake tree plus the Table 1 ALFWorld runs' episodes (G-Memory fails the second
    familiar task, MemCo solves both; MemCo's episodes under two agent views) and a Table 1
    PDDL MemCo run with a saved snapshot."""
    build_fake_tree(root)
    alf = root / "memco_table1" / "alfworld"
    for seed in (0, 1):
        write_episodes(
            alf / "gmemory" / BB / f"seed{seed}",
            [
                episode(FAMILIAR + "0000", True, [("look", GMEM_MEMORY)]),
                episode(
                    FAMILIAR + "0001",
                    False,
                    [("go to shelf 1", GMEM_MEMORY), ("move cloth 1 to countertop 1", GMEM_MEMORY)],
                ),
            ],
        )
        memco = []
        for agent in ("bathroom", "kitchen"):
            for task in (FAMILIAR + "0000", FAMILIAR + "0001", HELDOUT + "0000"):
                steps = [(f"act{k}", memco_memory(agent, k)) for k in range(3)]
                memco.append(episode(task, True, steps, agent=agent))
        write_episodes(alf / "memco" / BB / f"seed{seed}", memco)
    pddl = write_run(
        root,
        "memco_table1_pddl",
        "pddl",
        "memco",
        None,
        BB,
        0,
        {"success_rate": 0.5, "avg_steps": 9.0},
    )
    (pddl / "memory").mkdir()
    blob = {"method": "memco", "schema_version": 2, "state": state or saved_state()}
    (pddl / "memory" / "memory.json").write_text(json.dumps(blob))
    return root


def test_notebook_figures_1bc_6_and_appendix_j(tmp_path):
    results, out = build_figure_tree(tmp_path / "results"), tmp_path / "out"
    run_notebook(MEMCO_NB, params(results, out))
    for name in (
        "fig1bc_alfworld_layouts",
        "fig6_case_study",
        "appJ_local_memory",
        "appJ_global_memory",
    ):
        assert (out / f"{name}.png").read_bytes()[:8] == PNG, name

    # Figure 1(b,c): familiar = acc + 0.01 * seed, held-out = acc - 0.05 (build_fake_tree)
    fig1 = pd.read_csv(out / "fig1bc_alfworld_layouts.csv")
    # the figure's numbers, and (write_table) the flags of the runs behind them
    assert list(fig1.columns) == ["backbone", "method", "split", "mean", "std", "n_seeds", "flags"]
    assert len(fig1) == 3 * 2 and set(fig1["backbone"]) == {BB}
    assert list(fig1["method"].unique()) == ["icl", "gmemory", "memco"]  # the tables' order
    rows = fig1.set_index(["method", "split"])
    for method, acc in (("icl", 0.6), ("gmemory", 0.7), ("memco", 0.9)):
        familiar = [100 * acc, 100 * (acc + 0.01)]
        assert rows.loc[(method, "familiar"), "mean"] == pytest.approx(sum(familiar) / 2)
        # sample std of two values a, b: |a - b| / sqrt(2) = 1 / sqrt(2)
        assert rows.loc[(method, "familiar"), "std"] == pytest.approx(1 / 2**0.5)
        assert rows.loc[(method, "heldout"), "mean"] == pytest.approx(100 * (acc - 0.05))
        assert rows.loc[(method, "heldout"), "std"] == pytest.approx(0.0, abs=1e-9)
        assert (rows.loc[method, "n_seeds"] == 2).all()

    # Figure 6: the familiar task MemCo solved and G-Memory failed (0001, not the first, 0000),
    # seed 0; MemCo in the task's own domain agent's view (kitchen); held-out task in (c)
    case = pd.read_csv(out / "fig6_case_study.csv").fillna("")
    assert list(case["panel"]) == ["a"] * 2 + ["b"] * 3 + ["c"] * 3
    assert list(case["method"]) == ["gmemory"] * 2 + ["memco"] * 6
    assert set(case["seed"]) == {0} and set(case["backbone"]) == {BB}
    assert list(case["task_id"]) == [FAMILIAR + "0001"] * 5 + [HELDOUT + "0000"] * 3
    assert list(case["step"]) == [0, 1, 0, 1, 2, 0, 1, 2]
    assert list(case["action"]) == ["go to shelf 1", "move cloth 1 to countertop 1"] + [
        f"act{k}" for k in (0, 1, 2, 0, 1, 2)
    ]
    assert case["feedback"].tolist()[:2] == ["valid; state changed", "invalid; invalid_action"]
    assert case["observation"].iloc[0] == "obs 0 of go to shelf 1"
    assert case["memory"].tolist() == [GMEM_MEMORY] * 2 + [
        memco_memory("kitchen", k) for k in (0, 1, 2, 0, 1, 2)
    ]
    assert case["memory_ids"].tolist() == ["id0", "id1", "id0", "id1", "id2", "id0", "id1", "id2"]

    # Appendix J: the saved global records, best Wilson score first (W(6, 0) = 0.689 >
    # W(9, 1) = 0.652: fewer observations, but no negative one)
    glob = pd.read_csv(out / "appJ_global_memory.csv")
    assert list(glob["key"]) == ["g:precondition:2", "g:workflow:1"]
    assert list(glob["sources"]) == ["gripper", "blocksworld;gripper"]
    assert list(glob["type"]) == ["precondition", "workflow"]
    assert glob["wilson_score"].tolist() == pytest.approx([0.6892160, 0.6522813], abs=1e-6)
    assert glob["wilson_score"].tolist() == pytest.approx(
        [promotion_score(6, 0), promotion_score(9, 1)]
    )


def test_appendix_j_without_promoted_records(tmp_path):
    state = saved_state()
    state["global"]["records"] = []
    results, out = build_figure_tree(tmp_path / "results", state), tmp_path / "out"
    records = mf.global_records(state)
    assert records.empty and list(records.columns)[:4] == ["key", "type", "sources", "wilson_score"]
    path, fig = mf.figure_global(records, out)
    assert "no global records promoted" in fig.axes[0].get_title()
    assert path.read_bytes()[:8] == PNG
    g = mf.local_graph(state["agents"]["gripper"]["graph"])
    assert sorted(g.edges) == [
        ("action:pick gripper", "state:holding gripper"),
        ("state:start", "action:pick gripper"),
    ]
    assert mf._edge_color(g.edges["state:start", "action:pick gripper"]) == "green"
    assert mf.pddl_snapshot(mr.load_runs(results, "table1"))[1] == state


def test_case_study_without_recorded_prompts(tmp_path):
    """Episodes written without protocol.record_prompts: the steps and feedback are there, the
    memory column says how to record it; with no task MemCo solved and G-Memory failed, the
    first familiar task both ran in sorted order (0000) is the case."""
    results = build_figure_tree(tmp_path / "results")
    for method in ("gmemory", "memco"):
        path = results / "memco_table1" / "alfworld" / method / BB / "seed0" / "episodes.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            row["success"] = method == "gmemory"
            for step in row["trajectory"]["steps"]:
                del step["prompt"], step["memory_ids"]
        write_episodes(path.parent, rows)
    case = mf.case_table(mf.choose_case(mr.load_runs(results, "table1")))
    assert set(case["task_id"][case["panel"] != "c"]) == {FAMILIAR + "0000"}
    assert (case["memory"] == mf.NO_PROMPTS).all() and (case["memory_ids"] == "").all()
    assert case["action"].tolist()[:1] == ["look"]


def test_step_memory_reads_the_prompt():
    step = {"prompt": [{"role": "user", "content": f"few-shot\n\n{GMEM_MEMORY}\n\nYour task: x"}]}
    step["memory_spans"] = [{"message": 0, "slot": "m", "start": 10, "end": 10 + len(GMEM_MEMORY)}]
    assert mf.step_memory(step) == GMEM_MEMORY
    assert mf.step_memory({"prompt": [{"role": "user", "content": "no memory"}]}) == ""
    assert mf.step_memory({"action": "look"}) == mf.NO_PROMPTS
    # protocol.record_memory: the recorded slots, whatever the prompt holds
    recorded = {"memory": {"memco": " Decision Summary: go to sinkbasin 1 ", "empty": ""},
                "prompt": [{"role": "user", "content": "no memory"}]}  # fmt: skip
    assert mf.step_memory(recorded) == "Decision Summary: go to sinkbasin 1"
