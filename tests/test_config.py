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
