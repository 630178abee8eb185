"""The suite's time budget (tests/suite_budget.py): printed always, enforced on the whole suite."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from suite_budget import budget_minutes, over_budget

from conftest import ROOT


def test_the_repository_keeps_a_budget_within_ci_limit():
    # the target is 20 minutes (issue 32); 60 while the suite's time varies 1.5x with the
    # machine's hour (CI stops at 90)
    assert 0 < budget_minutes(ROOT / "pyproject.toml") <= 60


def test_the_message_names_the_ten_slowest_tests():
    durations = {f"tests/test_x.py::test_{i}": float(i) for i in range(15)}
    assert over_budget(60 * 20, 20, durations) is None
    message = over_budget(60 * 20 + 1, 20, durations)
    assert message.startswith("the test suite took 20m01s, over its budget of 20 minutes")
    named = [line.split()[-1] for line in message.splitlines()[1:]]
    assert named == [f"tests/test_x.py::test_{i}" for i in range(14, 4, -1)]


def _suite(tmp_path: Path, budget: float) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.pytest.ini_options]\ntestpaths = ["."]\n[tool.memarena.tests]\n'
        f"budget_minutes = {budget}\n"
    )
    (tmp_path / "test_a.py").write_text(textwrap.dedent("""
        import time
        def test_slow(): time.sleep(0.2)
        def test_quick(): pass
    """))
    return tmp_path


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    env_path = str(Path(__file__).parent)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "suite_budget", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_a_suite_over_its_budget_fails_naming_its_slowest_test(tmp_path):
    proc = _pytest(_suite(tmp_path, budget=0.001))  # 0.06 s
    assert proc.returncode == 1, proc.stdout
    assert "2 passed" in proc.stdout and "over its budget of 0.001 minutes" in proc.stdout
    slowest = proc.stdout.split("The ten slowest tests:")[1].splitlines()[1]
    assert slowest.endswith("test_a.py::test_slow")


def test_within_budget_or_a_part_of_the_suite_only_prints_the_wall_time(tmp_path):
    project = _suite(tmp_path, budget=10)
    proc = _pytest(project)
    assert proc.returncode == 0 and "(budget 10 minutes, pyproject.toml)" in proc.stdout
    project.joinpath("pyproject.toml").write_text(
        project.joinpath("pyproject.toml").read_text().replace("= 10", "= 0.001"))
    part = _pytest(project, "-k", "quick")  # a selection is not held to the suite's budget
    assert part.returncode == 0 and "over its budget" not in part.stdout
