"""Ad-hoc runs (no ``experiment=``) get a results folder of their own, named from the overrides
their run folder does not show (issue 51, 4): the README's ``method=icl env=pddl
backbone=scripted`` followed by a capped sweep of the same cells used to fail a job with "holds
records made with another configuration (protocol.max_train_tasks: 8 ... 4 now)"."""

from __future__ import annotations

import json

from conftest import run_py
from memarena.pipeline.adhoc import MAX_NAME, adhoc_name, is_adhoc


def test_the_name_shows_the_overrides_the_folder_does_not():
    base = ["method=icl", "env=pddl", "backbone=scripted", "seed=1", "ablation=none",
            "paths.results_dir=/x", "logger=none", "launcher=joblib", "hydra.verbose=true"]
    assert adhoc_name("demo", base) == "demo"  # the folder shows these, or they change nothing
    assert adhoc_name("demo", [*base, "protocol.max_train_tasks=4", "protocol.step_budget=9"]) == (
        "demo+protocol.max_train_tasks-4+protocol.step_budget-9"
    )  # sorted: the command's order does not matter
    # a character the override grammar cannot take back ([ ] ,) is replaced, and a hash added
    lost = adhoc_name("demo", ["env.domains=[gripper,barman]"])
    assert lost.startswith("demo+env.domains-_gripper_barman_+") and len(lost) < MAX_NAME
    assert lost != adhoc_name("demo", ["env.domains=[gripper_barman]"])
    assert adhoc_name("demo", ["env.domains=[gripper]", "protocol.max_train_tasks=4"]) == (
        adhoc_name("demo", ["protocol.max_train_tasks=4", "env.domains=[gripper]"])
    )
    assert adhoc_name("adhoc", ["env/wiki=local", "++method.k=3"]) == (
        "adhoc+env-wiki-local+method.k-3"
    )
    long = adhoc_name("demo", [f"method.k{i}={'x' * 20}" for i in range(10)])
    other = adhoc_name("demo", [f"method.k{i}=y" for i in range(10)])
    assert len(long) == MAX_NAME and long != other
    # each name given back on the command line parses as one value (protocol.snapshot_from=...)
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for name in (lost, long, adhoc_name("demo", ["protocol.max_train_tasks=4", "env/wiki=local"])):
        value = f"/r/{name}/pddl_generated/memco/scripted/seed0"
        (parsed,) = parser.parse_overrides([f"protocol.snapshot_from={value}"])
        assert parsed.value() == value
    assert is_adhoc(["experiment=demo", "protocol.max_train_tasks=4"]) and is_adhoc(["~experiment"])
    assert not is_adhoc(["experiment=pddl_baselines"]) and not is_adhoc(["experiment_name=mine"])


def test_the_readme_run_then_a_capped_sweep_do_not_collide(tmp_path):
    common = ["env=pddl", "backbone=scripted", "logger=none", f"paths.results_dir={tmp_path}",
              f"paths.log_dir={tmp_path}/logs"]  # fmt: skip
    first = run_py(["method=icl", *common])
    assert first.returncode == 0, first.stderr[-3000:]
    sweep = run_py(["-m", "method=none,icl", "protocol.max_train_tasks=4",
                    "protocol.max_eval_tasks=2", *common])  # fmt: skip
    assert sweep.returncode == 0, (sweep.stdout + sweep.stderr)[-3000:]
    assert "another configuration" not in sweep.stdout + sweep.stderr
    folders = {p.parent.relative_to(tmp_path).parts[:3]: json.loads(p.read_text())["n_tasks"]
               for p in tmp_path.rglob("metrics.json")}  # fmt: skip
    capped = "demo+protocol.max_train_tasks-4"
    assert folders == {
        ("demo", "pddl_generated", "icl"): 4,  # the demo's caps
        (capped, "pddl_generated", "icl"): 2,
        (capped, "pddl_generated", "none"): 2,
    }
