"""The pre-flight of a whole sweep (issue 51, 1): a sweep whose jobs lack their data, an API key
or a package is refused before any job starts, with one report naming each problem once and the
jobs it affects, whatever the launcher (basic, joblib, submitit_local; the Slurm dry run prints
it under its plan). ``launcher=ray`` without Ray says how to install it."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import CONF, run_py
from memarena.config_check import plan_overrides, sweep_cells
from memarena.launch import preflight
from memarena.launch.preflight import Report
from memarena.launch.preflight import sweep_report as _report

# two jobs: an API backbone without its key, a vLLM preset (vLLM is not installed here), both on
# ALFWorld's official data, which is not configured
BROKEN = ["method=none", "env=alfworld", "env.require_data=true",
          "backbone=gpt_4o_mini,qwen3_8b", "logger=none"]  # fmt: skip


def sweep_report(overrides, params, conf, **kw):
    return _report(*sweep_cells(overrides, params), conf, **kw)


KEY = "reads its API key from $OPENAI_API_KEY, which is not set"
DATA = "this run needs the official data: set ALFWORLD_DATA"
VLLM = "needs the Python package `vllm`, not installed here"


@pytest.mark.parametrize(
    "launcher",
    [["launcher=local"], ["launcher=joblib"], ["launcher=submitit_local"],
     ["launcher=slurm", "hydra.launcher.dry_run=true"]],
    ids=["basic", "joblib", "submitit_local", "slurm_dry_run"],
)  # fmt: skip
def test_a_sweep_missing_data_a_key_and_a_package_is_refused_before_any_job(
    tmp_path, monkeypatch, launcher
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    vllm_here = importlib.util.find_spec("vllm") is not None  # the vLLM venv of make test-all
    proc = run_py(["-m", *BROKEN, *launcher, f"paths.results_dir={tmp_path}/res",
                   f"hydra.sweep.dir={tmp_path}/sweep"], timeout=300)  # fmt: skip
    err = proc.stderr
    assert proc.returncode == 2, err[-3000:]
    assert "Traceback" not in err
    n = 2 if vllm_here else 3
    assert f"pre-flight of the sweep's 2 job(s) found {n} problems; no job was started" in err
    assert err.count(KEY) == 1 and err.count(DATA) == 1, err
    assert err.count(VLLM) == (0 if vllm_here else 1), err
    assert "jobs: #0 backbone=gpt_4o_mini" in err and "jobs: every job" in err
    assert not (tmp_path / "res").exists()  # no run folder
    sweep = tmp_path / "sweep"
    assert not (sweep / ".submitit").exists() and not list(sweep.rglob("*.log"))
    if "launcher=slurm" in launcher:  # the dry run's plan comes first
        assert "launcher=slurm dry run: 2 jobs" in proc.stdout
    else:
        assert not sweep.exists()  # refused before Hydra made the sweep folder


def test_a_sweep_that_can_run_passes(tmp_path):
    report = sweep_report(["method=none,icl", "env=pddl", "backbone=scripted", "seed=0,1",
                           f"paths.results_dir={tmp_path}"], {}, CONF)  # fmt: skip
    assert report.n_jobs == 4 and report.text() == ""


def test_a_missing_snapshot_is_named_with_the_jobs_it_affects(tmp_path):
    report = sweep_report(["experiment=memco_table12", "env.require_data=false", "seed=0,1",
                           f"paths.results_dir={tmp_path}"], {}, CONF)  # fmt: skip
    text = report.text()
    assert "protocol.snapshot_from=memco_table1" in text and "Run that experiment first" in text
    # each seed's own snapshot: two problems, one job each
    assert text.count("protocol.snapshot_from=memco_table1:") == 2, text
    assert "jobs: #0 seed=0" in text and "jobs: #1 seed=1" in text


def test_packages_are_checked_by_what_the_job_builds(tmp_path):
    absent = {"vllm", "scienceworld", "submitit"}
    report = sweep_report(
        ["method=none", "env=scienceworld,pddl", "backbone=scripted",
         "launcher=submitit_local", f"paths.results_dir={tmp_path}"],
        {}, CONF, can_import=lambda m: m not in absent,
    )  # fmt: skip
    text = report.text()
    assert "`scienceworld`" in text and "jobs: #0 env=scienceworld\n" in text + "\n"
    assert "hydra.launcher" in text and "`submitit`" in text and "jobs: every job" in text
    assert "`vllm`" not in text  # the scripted backbone imports no vLLM


def test_the_report_names_a_set_of_jobs_by_what_they_share():
    cells = {f"#{i} b={b} seed={s}": (f"b={b}", f"seed={s}")
             for i, (b, s) in enumerate([(b, s) for b in "xy" for s in "012"])}  # fmt: skip
    report = Report(n_jobs=6, cells=cells)
    names = list(cells)
    for name in names[:3]:
        report.add("memarena: problem x", name)
    report.add("memarena: problem seed", names[0])
    report.add("memarena: problem seed", names[3])
    for name in names:
        report.add("memarena: problem all", name)
    text = report.text()
    assert "found 3 problems" in text
    assert "problem x\n     jobs: the 3 jobs with b=x\n" in text
    assert "problem seed\n     jobs: the 2 jobs with seed=0\n" in text
    assert text.endswith("problem all\n     jobs: every job")


def test_launcher_ray_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(preflight, "importable", lambda module: module != preflight.RAY_PLUGIN)
    error = plan_overrides(["launcher=ray", "backbone=scripted"], CONF, multirun=True).error
    assert error is not None and "launcher=ray needs the Ray launcher" in error
    assert "pip install -e '.[ray]'" in error and "Could not find" not in error
    monkeypatch.undo()  # with Ray installed (the dev extra) it composes
    assert plan_overrides(["launcher=ray", "backbone=scripted"], CONF, multirun=True).error is None
