"""The test suite's time budget (pytest plugin, loaded by tests/conftest.py).

The suite's own wall time (pytest's session, set-up excluded) is printed at the end of every
run; when it exceeds ``budget_minutes`` of ``[tool.memarena.tests]`` in pyproject.toml the run
fails with a message naming the ten slowest tests (set-up, call and tear-down together, summed
over the workers' reports under pytest-xdist). A run that stopped early (``-x``, Ctrl-C) or
that selected a part of the suite (``-k``, ``-m``, a path) is not held to the budget: the
budget is for the whole suite, as ``make test`` runs it.
"""

from __future__ import annotations

import time
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

DEFAULT_MARKS = ("", "not full")  # pyproject's addopts: the suite as `make test` runs it
_STATE: dict = {}


def budget_minutes(pyproject: Path) -> float:
    """``[tool.memarena.tests] budget_minutes`` of ``pyproject`` (the rootdir's pyproject.toml)."""
    settings = tomllib.loads(pyproject.read_text())
    try:
        return float(settings["tool"]["memarena"]["tests"]["budget_minutes"])
    except KeyError as err:
        raise KeyError(
            f"{pyproject} has no [tool.memarena.tests] budget_minutes (the test suite's budget)"
        ) from err


def over_budget(wall_s: float, budget_min: float, durations: dict[str, float]) -> str | None:
    """The failure message when ``wall_s`` exceeds the budget, else None."""
    if wall_s <= 60 * budget_min:
        return None
    slowest = sorted(durations.items(), key=lambda item: item[1], reverse=True)[:10]
    lines = [
        f"the test suite took {_clock(wall_s)}, over its budget of {budget_min:g} minutes "
        f"([tool.memarena.tests] budget_minutes in pyproject.toml). The ten slowest tests:",
        *(f"  {seconds:8.1f} s  {nodeid}" for nodeid, seconds in slowest),
    ]
    return "\n".join(lines)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _whole_suite(config: pytest.Config) -> bool:
    """No -k / -m / path selection beyond the configured testpaths."""
    option = config.option
    if getattr(option, "keyword", "") or getattr(option, "markexpr", "") not in DEFAULT_MARKS:
        return False
    given = [str(a) for a in config.args]
    testpaths = [str(Path(config.rootpath, p)) for p in config.getini("testpaths")]
    return all(str(Path(config.rootpath, a).resolve()) in testpaths for a in given)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_worker(session.config):
        _STATE.update(start=time.monotonic(), durations=defaultdict(float))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "durations" in _STATE:
        _STATE["durations"][report.nodeid] += report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_worker(config) or "start" not in _STATE or config.option.collectonly:
        return
    wall = time.monotonic() - _STATE["start"]
    budget = budget_minutes(config.rootpath / "pyproject.toml")
    _STATE["lines"] = [
        f"test suite wall time: {_clock(wall)} (budget {budget:g} minutes, pyproject.toml)"
    ]
    stopped = config.option.maxfail or exitstatus == pytest.ExitCode.INTERRUPTED
    if stopped or not _whole_suite(config):
        return
    message = over_budget(wall, budget, dict(_STATE["durations"]))
    if message:
        _STATE["lines"].append(message)
        if exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    for i, line in enumerate(_STATE.get("lines", [])):
        terminalreporter.write_line(line, red=i > 0)
