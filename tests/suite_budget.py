"""The test suite's time budget (pytest plugin, loaded by tests/conftest.py).

The budget is CPU time, which other load on the machine hardly moves: the user + system
seconds of pytest, its xdist workers and every process they started and reaped (the runs, the
warm zygotes, the servers), from the session's start to its end. The same 2-core machine has
run the same suite in 13 and in 24 minutes of wall time on different hours, and a probe timed
before and after the tests missed contention in between; CPU seconds do not. The run fails when
they exceed ``budget_cpu_minutes`` of ``[tool.memarena.tests]`` in pyproject.toml, or when the
wall time exceeds ``max_wall_minutes`` (a backstop below CI's limit), with a message naming the
ten slowest tests (set-up, call and tear-down together, summed over the workers' reports under
pytest-xdist). Both are printed at the end of every run. A run that stopped early (``-x``,
Ctrl-C) or that selected a part of the suite (``-k``, ``-m``, a path) is not held to the budget:
the budget is for the whole suite, as ``make test`` runs it.
"""

from __future__ import annotations

import resource
import time
import tomllib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

DEFAULT_MARKS = ("", "not full")  # pyproject's addopts: the suite as `make test` runs it
_STATE: dict = {}


@dataclass(frozen=True)
class Budget:
    """``[tool.memarena.tests]`` of pyproject.toml."""

    minutes: float  # the wall minutes make test aims at on the reference machine (2 cores)
    cpu_minutes: float | None = None  # the enforced budget: CPU minutes of the whole suite
    max_wall_minutes: float | None = None  # the wall backstop


def read_budget(pyproject: Path) -> Budget:
    """The suite's budget in ``pyproject`` (the rootdir's pyproject.toml)."""
    tests = tomllib.loads(pyproject.read_text()).get("tool", {}).get("memarena", {}).get("tests")
    if not tests or "budget_minutes" not in tests:
        raise KeyError(
            f"{pyproject} has no [tool.memarena.tests] budget_minutes (the test suite's budget)"
        )
    cpu, wall = tests.get("budget_cpu_minutes"), tests.get("max_wall_minutes")
    return Budget(
        minutes=float(tests["budget_minutes"]),
        cpu_minutes=None if cpu is None else float(cpu),
        max_wall_minutes=None if wall is None else float(wall),
    )


def cpu_seconds() -> float:
    """User + system seconds of this process and of every child it (or they) reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def over_budget(
    wall_s: float, cpu_s: float, budget: Budget, durations: dict[str, float]
) -> str | None:
    """The failure message when the suite's CPU seconds exceed ``budget.cpu_minutes`` or its
    wall time ``budget.max_wall_minutes`` (without a CPU budget: ``budget.minutes`` of wall
    time), else None."""
    reasons = []
    if budget.cpu_minutes is not None and cpu_s > 60 * budget.cpu_minutes:
        reasons.append(f"{_clock(cpu_s)} of CPU time, over its budget of "
                       f"{budget.cpu_minutes:g} CPU minutes")  # fmt: skip
    wall_limit = budget.max_wall_minutes if budget.cpu_minutes is not None else budget.minutes
    if wall_limit is not None and wall_s > 60 * wall_limit:
        reasons.append(f"{_clock(wall_s)} of wall time, over its limit of {wall_limit:g} minutes")
    if not reasons:
        return None
    slowest = sorted(durations.items(), key=lambda item: item[1], reverse=True)[:10]
    lines = [
        f"the test suite took {' and '.join(reasons)} ([tool.memarena.tests] in "
        "pyproject.toml). The ten slowest tests:",
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
    config = session.config
    if _is_worker(config):
        return
    budget = read_budget(config.rootpath / "pyproject.toml")
    _STATE.update(start=time.monotonic(), cpu=cpu_seconds(), durations=defaultdict(float),
                  budget=budget)  # fmt: skip


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "durations" in _STATE:
        _STATE["durations"][report.nodeid] += report.duration


@pytest.hookimpl(trylast=True)  # after xdist has shut its workers down (and reaped them)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_worker(config) or "start" not in _STATE or config.option.collectonly:
        return
    wall, cpu = time.monotonic() - _STATE["start"], cpu_seconds() - _STATE["cpu"]
    budget: Budget = _STATE["budget"]
    limits = [f"budget {budget.minutes:g} minutes"]
    if budget.cpu_minutes is not None:
        limits = [f"budget {budget.cpu_minutes:g} CPU minutes"]
        if budget.max_wall_minutes is not None:
            limits.append(f"wall limit {budget.max_wall_minutes:g} minutes")
    _STATE["lines"] = [
        f"test suite wall time: {_clock(wall)}, CPU time {_clock(cpu)} "
        f"({', '.join(limits)}, pyproject.toml)"
    ]
    stopped = config.option.maxfail or exitstatus == pytest.ExitCode.INTERRUPTED
    if stopped or not _whole_suite(config):
        return
    message = over_budget(wall, cpu, budget, dict(_STATE["durations"]))
    if message:
        _STATE["lines"].append(message)
        if exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    for i, line in enumerate(_STATE.get("lines", [])):
        terminalreporter.write_line(line, red=i > 0)
