"""Shared fixtures: the repo root, the shared reference data, a composed config."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)

pytest_plugins = ["suite_budget"]  # the suite's time budget (tests/suite_budget.py)

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED_DATA = ROOT.parent / "shared" / "data"
NOTEBOOK = ROOT / "notebooks" / "00_overview.ipynb"
MODELS_DIR = ROOT / ".cache" / "models"  # paths.models_dir of a run with the default paths


def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per usable core, at most 8 (each holds its own models)."""
    return max(1, min(_usable_cores(), 8))


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--spawn-runs",
        action="store_true",
        help="start each run_py as a plain `python run.py` instead of forking it from a warm "
        "process that has imported torch, transformers and memarena (tests/prefork.py)",
    )


def pytest_configure(config) -> None:
    """Under pytest-xdist, each worker and the runs it starts use their share of the cores
    (OMP_NUM_THREADS, which torch reads and memarena's ``num_threads: auto`` keeps), so two
    workers' model threads never wait on each other."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        threads = max(1, _usable_cores() // int(workers))
        os.environ["OMP_NUM_THREADS"] = str(threads)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(threads)
    _RUNS["spawn"] = config.getoption("--spawn-runs")
    from prefork import ZYGOTE  # its warm process starts in this environment, before any test

    ZYGOTE.start_env = dict(os.environ)


_RUNS: dict = {"spawn": False}


def pytest_sessionfinish(session) -> None:
    """Stop this process's warm zygote before the suite's budget is read (tests/suite_budget.py
    runs last): reaped, its CPU time and its runs' count toward the suite's."""
    from prefork import ZYGOTE

    ZYGOTE.stop()


def compose_cfg(overrides: list[str] | None = None, *, return_hydra_config: bool = False):
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose("config", overrides=overrides or [], return_hydra_config=return_hydra_config)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():  # a missing fixture is a failure, never a silent skip
        pytest.fail(
            f"reference data not found at {SHARED_DATA} (../shared/data beside the checkout); "
            "the tests that read it cannot run without it"
        )
    return SHARED_DATA


# a run's memory LLM as the schema-filling double of tests/doubles.py (``run_py(...,
# doubles=True)`` puts tests/ on the run's path): every JSON request gets a valid answer at once.
# For runs whose tests check tables and pipeline behaviour, not what a real model writes.
SCHEMA_LLM = [
    "memory_backbone.same_as_agent=false",
    "+memory_backbone._target_=doubles.SchemaLLM",
    "+memory_backbone.name=schema-llm",
    "~memory_backbone.fallback",
]


def run_py(args: list[str], cwd: Path = ROOT, timeout: int = 600, doubles: bool = False):
    """Run `python run.py ARGS` in a subprocess and return the CompletedProcess.

    A run must write into a temporary ``paths.results_dir``; its LLM call cache is that
    folder's ``.llm_calls.sqlite`` unless the test sets ``paths.llm_cache`` or
    ``paths.cache_dir`` itself, so a test calls the model on its first run (and replays on a
    resume into the same folder), never a cache another test or an earlier session left in
    the repository. A test that gives its own ``paths.cache_dir`` (fresh generated data and
    call cache) still reads the converted embedded model from ``MODELS_DIR`` unless it sets
    ``paths.models_dir`` too. ``doubles``: tests/ on the run's PYTHONPATH, so a config may name
    a test double (``SCHEMA_LLM``) as a ``_target_``.

    The run is forked from a warm process (:func:`run_script`)."""
    given = {a.split("=", 1)[0].lstrip("+~") for a in args if "=" in a}
    if "--cfg" not in args and "--help" not in args:
        results = next((a.split("=", 1)[1] for a in args if a.startswith("paths.results_dir=")),
                       None)  # fmt: skip
        assert results is not None, "run_py: give paths.results_dir=<a tmp_path> (never ./results)"
        if not given & {"paths.llm_cache", "paths.cache_dir"}:
            args = [*args, f"paths.llm_cache={results}/.llm_calls.sqlite"]
        if "paths.cache_dir" in given and "paths.models_dir" not in given:
            args = [*args, f"paths.models_dir={MODELS_DIR}"]  # converted once, not per test
    return run_script(ROOT / "run.py", args, cwd=cwd, timeout=timeout, doubles=doubles)


def run_script(
    script: Path, args: list[str], cwd: Path = ROOT, timeout: float = 600, doubles: bool = False
):
    """``python SCRIPT ARGS`` (a script of the repository) as ``subprocess.run(...,
    capture_output=True, text=True)`` returns it. The script runs forked from a warm process
    that has already imported torch, transformers and memarena (tests/prefork.py: the script
    as ``__main__`` with its argv, cwd and environment, in its own process, without 15-25 s of
    imports); ``pytest --spawn-runs`` starts a plain ``python SCRIPT``. ``doubles``: tests/ on
    the script's PYTHONPATH, so a config may name a test double as a ``_target_``."""
    import subprocess

    env = dict(os.environ)
    if doubles:
        paths = [str(ROOT / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
        env["PYTHONPATH"] = os.pathsep.join(paths)
    argv = [sys.executable, str(script), *map(str, args)]
    if _RUNS["spawn"]:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env)  # fmt: skip
    from prefork import ZYGOTE  # one per worker, shared by the threads that start runs

    return ZYGOTE.run(argv, cwd, env, timeout)


def run_notebook(path: Path, parameters: str):
    """Execute a notebook with its `parameters`-tagged cell replaced by `parameters`."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    cell.source = parameters
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb


def notebook_text(nb) -> str:
    """Everything an executed notebook printed or displayed (text, markdown, plain reprs)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts += [out.get("text", ""), str(data.get("text/markdown", "")),
                      str(data.get("text/plain", ""))]
    return "\n".join(parts)


@pytest.fixture
def isolated_wandb(tmp_path, monkeypatch):
    """No W&B settings from the environment (API key, mode, and WANDB_SERVICE, which an earlier
    in-process wandb.init leaves set: a subprocess would join that service, where a killed run's
    id stays "in use"), and W&B's own caches inside tmp_path."""
    for var in [v for v in os.environ if v.startswith("WANDB_")]:
        monkeypatch.delenv(var, raising=False)
    for var, sub in (("WANDB_CACHE_DIR", "cache"), ("WANDB_CONFIG_DIR", "config"),
                     ("WANDB_DATA_DIR", "data")):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home" / sub))
