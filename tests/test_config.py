"""Every option of every config group composes (lightning-hydra-template style), and config
mistakes end with a one-paragraph message naming the valid options."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from conftest import CONF, compose_cfg, run_py
from memarena.config_check import check_overrides, config_groups, group_options

GROUPS = [g for g in config_groups(CONF) if g != "launcher"]
OPTIONS = [(g, o) for g in GROUPS for o in group_options(CONF, g)]


def test_groups_of_the_design_exist():
    expected = {
        "method",
        "ablation",
        "env",
        "backbone",
        "memory_backbone",
        "embedder",
        "protocol",
        "logger",
        "launcher",
        "experiment",
        "paths",
    }
    # env/wiki: the Wikipedia backend of the envs that search it (fever, hotpotqa)
    assert set(config_groups(CONF)) == expected | {"env/wiki"}


@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=[f"{g}={o}" for g, o in OPTIONS])
def test_every_option_composes_and_resolves(group, option):
    overrides = [f"{group}={option}"]
    if group == "env/wiki":  # a nested group: only envs that search Wikipedia have it
        overrides.insert(0, "env=fever")
    if group == "ablation" and "/" in option:  # ablation=<method>/<variant>
        overrides.append(f"method={option.split('/')[0]}")
    cfg = compose_cfg(overrides)
    OmegaConf.resolve(cfg)  # no dangling interpolations
    for key in ("env", "method", "backbone"):
        assert cfg[key].name, f"{key} needs a name"
    assert "_target_" in cfg.method and "_target_" in cfg.env and "_target_" in cfg.backbone


@pytest.mark.parametrize("launcher", group_options(CONF, "launcher"))
def test_every_launcher_composes(launcher):
    cfg = compose_cfg([f"launcher={launcher}"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_


def test_results_dir_is_configurable(tmp_path):
    cfg = compose_cfg([f"paths.results_dir={tmp_path}"])
    assert cfg.paths.results_dir == str(tmp_path)


@pytest.mark.parametrize(
    ("overrides", "must_contain"),
    [
        (["method=nope"], ["method=nope", "Valid choices", "icl", "none"]),
        (["-m", "method=none,nope"], ["method=nope"]),
        (
            ["protocol.concurency=4"],
            ["protocol.concurency", "Did you mean protocol.concurrency", "Valid keys"],
        ),
        (["env=pdl"], ["Did you mean env=pddl"]),
    ],
)
def test_bad_overrides_give_one_paragraph(overrides, must_contain):
    message = check_overrides([o for o in overrides if not o.startswith("-")], CONF)
    assert message is not None
    for text in must_contain:
        assert text in message
    assert "\n" not in message and "Traceback" not in message


def test_good_overrides_pass():
    assert check_overrides(["method=icl", "seed=3", "protocol.concurrency=2"], CONF) is None
    assert check_overrides(["method=none,icl", "seed=0,1"], CONF) is None


def test_run_py_reports_bad_choice_without_traceback(tmp_path):
    proc = run_py(["method=nope", f"paths.results_dir={tmp_path}"], timeout=120)
    assert proc.returncode == 2
    assert "Valid choices" in proc.stderr and "Traceback" not in proc.stderr


def test_run_py_prints_config():
    proc = run_py(["--cfg", "job", "method=icl"], timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "method:" in proc.stdout and "icl" in proc.stdout


def test_experiment_null_drops_the_demo_caps_and_groups_compose_in_order():
    from memarena.config_check import expand_group_shorthand

    assert expand_group_shorthand(["experiment=null", "env.wiki=local"]) == [
        "~experiment",
        "env/wiki=local",
    ]
    full = compose_cfg(["~experiment", "ablation=budget_20"])
    assert full.protocol.max_train_tasks is None and full.protocol.step_budget == 20
    # no group switches another: env=bfcl keeps the default protocol; ReMe's comes with its
    # experiment files
    bfcl = compose_cfg(["env=bfcl", "method=none"])
    assert (bfcl.protocol.runs, bfcl.protocol.repetitions) == (1, 1)
    reme = compose_cfg(["experiment=reme_table1"])
    assert (reme.protocol.runs, reme.protocol.repetitions, reme.env.name) == (4, 3, "bfcl")
    # an ablation may set protocol keys (ReMe dynamic: learning, updated after every task)
    dynamic = compose_cfg(["method=reme", "ablation=reme/dynamic"])
    assert dynamic.protocol.freeze_during_eval is False and dynamic.protocol.update_every == 1
    # ... but the memory backbone of Table 4 is chosen by its experiment file
    summ = compose_cfg(["experiment=reme_table4_14b"])
    assert summ.memory_backbone.name == "qwen3-14b" and summ.memory_backbone.same_as_agent is False
    assert summ.ablation.name == "summ_qwen3_14b"
    assert compose_cfg(["method=reme", "ablation=reme/summ_qwen3_14b"]).memory_backbone.get(
        "same_as_agent"
    )  # the ablation alone no longer switches it (the pipeline refuses that combination)


# --- issue 22 item 5: messages that name the real key, sweeps, -m, the cap warning ----------


def test_sweep_with_a_typo_in_a_method_key_names_that_key():
    # was "method is not a config key. Did you mean method?" (the error text was matched)
    message = check_overrides(["method=none,memco", "method.k_locl=3"], CONF)
    assert message.startswith("memarena: method.k_locl is not a config key.")
    assert "Did you mean method.k_local?" in message  # from memco's keys, not none's


def test_misspelled_env_key_names_the_key_and_its_fix():
    # was "env is not a config key"
    message = check_overrides(["env.step_budjet=3"], CONF)
    assert message.startswith("memarena: env.step_budjet is not a config key.")
    assert "Did you mean env.step_budget?" in message


def test_a_method_key_in_a_sweep_applies_where_the_method_has_it():
    from memarena.config_check import plan_overrides

    plan = plan_overrides(["method=none,memco", "method.k_local=3"], CONF, multirun=True)
    assert plan.error is None
    assert plan.rewrites == {"method.k_local=3": "++method.k_local=3"}
    (note,) = plan.notes
    assert "method.k_local applies only to the jobs with method=memco" in note
    assert "method=none do not have the key" in note
    # a key every job has is left as it is
    plain = plan_overrides(["method=memco,gmemory", "protocol.step_budget=3"], CONF, True)
    assert (plain.error, plain.rewrites, plain.notes) == (None, {}, [])


def test_jobs_drop_a_forced_key_their_method_does_not_take():
    from memarena.cli import drop_keys_not_taken

    none = compose_cfg(["method=none", "++method.k_local=3"])
    assert drop_keys_not_taken(none, ["method=none", "++method.k_local=3"]) == [
        "++method.k_local=3"
    ]
    assert "k_local" not in none.method
    memco = compose_cfg(["method=memco", "++method.k_local=3"])
    assert drop_keys_not_taken(memco, ["method=memco", "++method.k_local=3"]) == []
    assert memco.method.k_local == 3


def test_sweep_experiment_without_m_is_refused_unless_its_job_is_a_cell():
    from memarena.config_check import plan_overrides

    # pddl_baselines sweeps method: none,icl; alone it would run method=memco under its name
    error = plan_overrides(["experiment=pddl_baselines"], CONF, multirun=False).error
    assert "experiment=pddl_baselines is a sweep" in error
    assert "method=memco (the sweep's: none,icl)" in error
    assert "python run.py -m experiment=pddl_baselines" in error
    assert "python run.py experiment=pddl_baselines method=none seed=0" in error
    # every swept key in the sweep, or set on the command line: one cell, it runs
    cell = ["experiment=pddl_baselines", "method=icl"]  # seed 0 is one of 0,1,2
    assert plan_overrides(cell, CONF, multirun=False).error is None
    mine = ["experiment=pddl_baselines", "method=memco", "seed=7"]  # the user's own cell
    assert plan_overrides(mine, CONF, multirun=False).error is None
    assert plan_overrides(["experiment=pddl_baselines"], CONF, multirun=True).error is None
    assert plan_overrides(["method=icl"], CONF, multirun=False).error is None


def test_a_group_named_in_other_words_suggests_the_group():
    from memarena.config_check import plan_overrides

    error = plan_overrides(["benchmark=pddl"], CONF).error
    assert error.startswith("memarena: benchmark is not a config key. Did you mean env=pddl?")
    assert "model=qwen3_8b" not in plan_overrides(["model=qwen3_8b"], CONF).error
    assert "Did you mean backbone=qwen3_8b?" in plan_overrides(["model=qwen3_8b"], CONF).error


def test_cap_warning_names_where_the_caps_come_from():
    from memarena.pipeline.tasks import cap_warning

    assert "choose a paper experiment" in cap_warning("demo", (8, 4))
    paper = cap_warning("memco_table1_pddl", (4, 4))
    # was "choose a paper experiment" although one was chosen
    assert "choose a paper experiment" not in paper
    assert paper.startswith("experiment=memco_table1_pddl runs with task caps")
    assert "protocol.max_train_tasks=null protocol.max_eval_tasks=null" in paper


def test_run_py_sweeps_a_method_key_without_plus_plus(tmp_path):
    proc = run_py(
        ["-m", "method=none,memco", "method.k_local=3", "env=pddl", "backbone=scripted",
         "logger=none", "protocol.max_train_tasks=1", "protocol.max_eval_tasks=1",
         f"paths.results_dir={tmp_path}", f"hydra.sweep.dir={tmp_path}/sweep"],
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "method.k_local applies only to the jobs with method=memco" in out
    assert "method.k_local=3 does not apply to this job" in out
    assert len(list(tmp_path.rglob("metrics.json"))) == 2


def test_run_py_refuses_a_sweep_experiment_without_m_and_prints_its_config(tmp_path):
    args = ["experiment=pddl_baselines", f"paths.results_dir={tmp_path}"]
    proc = run_py(args, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "python run.py -m experiment=pddl_baselines" in proc.stderr
    assert "Traceback" not in proc.stderr and not list(tmp_path.iterdir())
    shown = run_py(["--cfg", "job", *args], timeout=120)  # printing the config runs nothing
    assert shown.returncode == 0 and "experiment_name: pddl_baselines" in shown.stdout
