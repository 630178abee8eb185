"""The test suite's time budget (pytest plugin, loaded by tests/conftest.py).

The suite's own wall time (pytest's session, set-up excluded) is printed at the end of every
run; when it exceeds ``budget_minutes`` of ``[tool.memarena.tests]`` in pyproject.toml the run
fails with a message naming the ten slowest tests (set-up, call and tear-down together, summed
over the workers' reports under pytest-xdist). A run that stopped early (``-x``, Ctrl-C) or
that selected a part of the suite (``-k``, ``-m``, a path) is not held to the budget: the
budget is for the whole suite, as ``make test`` runs it.

The budget is minutes at the machine's reference speed. The same 2-core machine has run the
same suite in 13 and in 24 minutes on different hours. So a whole-suite run times a probe
before the tests and again after them: about a second of single-thread interpreter, matmul
and memory-bandwidth work, no other process running. The probe's mean over
``reference_probe_seconds`` is the machine's slowdown, clamped to [1, ``max_slowdown``]. The
run fails when its wall time exceeds ``budget_minutes`` times that slowdown, and the line it
prints names both. Without ``reference_probe_seconds`` the budget is plain wall minutes.
``python tests/suite_budget.py`` prints the probe, to set the reference for another machine.
"""

from __future__ import annotations

import math
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

    minutes: float  # at the reference speed
    reference_probe_s: float | None = None  # the probe on the reference machine, quiet
    max_slowdown: float = 1.0


def read_budget(pyproject: Path) -> Budget:
    """The suite's budget in ``pyproject`` (the rootdir's pyproject.toml)."""
    tests = tomllib.loads(pyproject.read_text()).get("tool", {}).get("memarena", {}).get("tests")
    if not tests or "budget_minutes" not in tests:
        raise KeyError(
            f"{pyproject} has no [tool.memarena.tests] budget_minutes (the test suite's budget)"
        )
    reference = tests.get("reference_probe_seconds")
    return Budget(
        minutes=float(tests["budget_minutes"]),
        reference_probe_s=None if reference is None else float(reference),
        max_slowdown=float(tests.get("max_slowdown", 1.0)),
    )


def probe_seconds(repeats: int = 3) -> float:
    """About a second of fixed single-thread work, the best of ``repeats`` for each part:
    interpreter (config composition, the pipeline's loops), float32 matmuls (prefill) and
    passes over 64 MB (decode reads every weight once per token)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        square = torch.ones(1024, 1024) / 1024
        large = torch.ones(4096, 4096)
        parts = (
            lambda: sum(i % 7 for i in range(5_000_000)),
            lambda: [square @ square for _ in range(12)],
            lambda: [large.sum() for _ in range(60)],
        )
        best = [math.inf] * len(parts)
        for _ in range(repeats):
            for k, part in enumerate(parts):
                start = time.perf_counter()
                part()
                best[k] = min(best[k], time.perf_counter() - start)
        return sum(best)
    finally:
        torch.set_num_threads(threads)


def slowdown(probes: list[float], budget: Budget) -> float:
    """How much slower than its reference the machine ran: the probes' mean over the
    reference, clamped to [1, ``max_slowdown``]; 1 without a reference or a probe."""
    if budget.reference_probe_s is None or not probes:
        return 1.0
    ratio = sum(probes) / len(probes) / budget.reference_probe_s
    return min(max(ratio, 1.0), budget.max_slowdown)


def over_budget(
    wall_s: float, budget_min: float, durations: dict[str, float], factor: float = 1.0
) -> str | None:
    """The failure message when ``wall_s`` exceeds ``budget_min`` times the machine's slowdown
    ``factor``, else None."""
    if wall_s <= 60 * budget_min * factor:
        return None
    slowest = sorted(durations.items(), key=lambda item: item[1], reverse=True)[:10]
    allowed = (
        ""
        if factor == 1.0
        else (
            f" at the reference speed ({_clock(60 * budget_min * factor)} on this machine, "
            f"which ran {factor:.2f}x slower than its reference)"
        )
    )
    lines = [
        f"the test suite took {_clock(wall_s)}, over its budget of {budget_min:g} minutes"
        f"{allowed} ([tool.memarena.tests] in pyproject.toml). The ten slowest tests:",
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
    # whole-suite runs with a reference only (the probe is worth its 2 seconds there), before
    # xdist starts its workers (its sessionstart runs last): the machine is idle
    probing = budget.reference_probe_s is not None and _whole_suite(config)
    probes = [probe_seconds()] if probing and not config.option.collectonly else []
    _STATE.update(
        start=time.monotonic(), durations=defaultdict(float), probes=probes, budget=budget
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "durations" in _STATE:
        _STATE["durations"][report.nodeid] += report.duration


@pytest.hookimpl(trylast=True)  # after xdist has shut its workers down
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if _is_worker(config) or "start" not in _STATE or config.option.collectonly:
        return
    wall = time.monotonic() - _STATE["start"]
    budget, probes = _STATE["budget"], _STATE["probes"]
    if probes:  # the workers have finished their tests: the machine is idle again
        probes.append(probe_seconds())
    factor = slowdown(probes, budget)
    speed = ""
    if probes:
        measured = ", ".join(f"{p:.2f}" for p in probes)
        speed = (
            f"; probe {measured} s against {budget.reference_probe_s:g} s:"
            f" {_clock(60 * budget.minutes * factor)} allowed"
        )
    _STATE["lines"] = [
        f"test suite wall time: {_clock(wall)} (budget {budget.minutes:g} minutes"
        f"{' at the reference speed' if budget.reference_probe_s else ''}, pyproject.toml{speed})"
    ]
    stopped = config.option.maxfail or exitstatus == pytest.ExitCode.INTERRUPTED
    if stopped or not _whole_suite(config):
        return
    message = over_budget(wall, budget.minutes, dict(_STATE["durations"]), factor)
    if message:
        _STATE["lines"].append(message)
        if exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    for i, line in enumerate(_STATE.get("lines", [])):
        terminalreporter.write_line(line, red=i > 0)


if __name__ == "__main__":  # the probe, to set reference_probe_seconds on a quiet machine
    print(f"{min(probe_seconds() for _ in range(3)):.3f}")
