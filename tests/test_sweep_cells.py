"""A sweep that would write two jobs into one run folder is refused before any job starts
(issue 50, 4): ``-m seed=0,0`` ran the cell twice with the basic launcher and failed on the
run folder's lock with joblib. Each job's folder is the pipeline's ``run_dir`` of its config."""

from __future__ import annotations

from conftest import CONF, run_py
from memarena.config_check import check_overrides, duplicate_cells, sweep_jobs

SCRIPTED = ["env=pddl", "backbone=scripted", "logger=none"]


def test_the_jobs_are_listed_as_the_basic_sweeper_lists_them():
    assert sweep_jobs(["seed=0,1", "method=none"], {"method": "icl,none", "env": "pddl"}) == [
        ["method=none", "env=pddl", "seed=0"], ["method=none", "env=pddl", "seed=1"],
    ]  # fmt: skip


def test_a_sweep_that_runs_one_cell_twice_is_refused_naming_the_jobs_and_the_folder(tmp_path):
    for overrides, jobs, name in [
        (["seed=0,0"], "'seed=0' and 'seed=0'", "demo"),
        (["method=icl,none,icl"], "'method=icl' and 'method=icl'", "demo"),
        (["experiment_name=mine", "protocol.temperature=0,0.5"],  # a key the folder does not
         "'protocol.temperature=0' and 'protocol.temperature=0.5'", "mine"),  # show, one name
    ]:  # fmt: skip
        error = check_overrides([*SCRIPTED, f"paths.results_dir={tmp_path}", *overrides], CONF)
        assert error is not None and error.startswith("memarena: the sweep runs one cell twice")
        assert jobs in error, error
        assert str(tmp_path / name / "pddl_generated") in error
        assert error.endswith("the run did not start.")
    # an experiment's own sweep and the command line together
    error = duplicate_cells(["experiment=pddl_baselines", "seed=3,3"], {"method": "none,icl"})
    assert error and "seed=3" in error and "pddl_baselines" in error


def test_distinct_cells_pass():
    assert check_overrides([*SCRIPTED, "seed=0,1", "method=none,icl"], CONF) is None
    # ad-hoc jobs that differ in a key the folder does not show get folders of their own
    assert check_overrides([*SCRIPTED, "protocol.temperature=0,0.5"], CONF) is None


def test_run_py_refuses_the_duplicate_sweep_before_any_job(tmp_path):
    proc = run_py(["-m", *SCRIPTED, "seed=0,0", f"paths.results_dir={tmp_path}",
                   f"paths.log_dir={tmp_path / 'logs'}"])  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "the sweep runs one cell twice" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())  # no run folder, no multirun folder


def test_a_swept_experiment_that_sweeps_itself_is_refused_and_others_are_checked_by_cell(tmp_path):
    """With ``experiment`` itself swept Hydra applies no experiment's ``hydra.sweeper.params``:
    each job would run one cell of a paper sweep, silently. Experiments without a sweep of
    their own are checked cell by cell, with no experiment's params."""
    error = check_overrides(["experiment=pddl_baselines,smoke", "backbone=scripted"], CONF)
    assert error is not None and "pddl_baselines (method, seed)" in error, error
    assert "smoke" not in error.split("themselves:")[1].split(".")[0]
    assert error.endswith("the run did not start.")
    out = f"paths.results_dir={tmp_path}"
    assert check_overrides(["experiment=smoke,demo", "backbone=scripted", out], CONF) is None
    twice = check_overrides(["experiment=smoke,smoke", "backbone=scripted", out], CONF)
    assert twice is not None and "runs one cell twice" in twice
