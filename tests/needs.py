"""What a test needs beyond the main package, as checks that fail naming the fix.

A missing dependency is a failure, never a skip (as a missing ../shared/data is in
``conftest.shared_data``): ``make test`` installs every one of them, so a skip would only hide
a broken set-up. A module whose every test needs something declares it once::

    _needs = module_needs(need_scienceworld)   # an autouse fixture

and each of its tests fails at set-up with the same one-line message; a single test calls the
check at its start (``need_module("langmem")``). Skips remain only for what the machine decides
(a GPU present or not; vLLM, which lives in the second venv of ``make test-all``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPWORLD_VENV = ROOT / ".venv-appworld"
PIP = ".venv/bin/python -m pip install"
SETUP = "`make setup` (bash scripts/setup.sh)"
SETUP_TEST = "`make setup-test` (bash scripts/setup.sh --test; `make test` runs it)"


def pinned(requirement: str) -> str:
    """``requirement`` with the pin pyproject.toml or scripts/setup.sh gives it (one source of
    truth for the hint), e.g. ``scienceworld`` -> ``scienceworld==1.2.3``."""
    texts = [(ROOT / f).read_text() for f in ("pyproject.toml", "scripts/setup.sh")]
    pattern = re.compile(rf"(?<![\w-]){re.escape(requirement)}(\[[\w,]+\])?==[\w.]+")
    for text in texts:
        if found := pattern.search(text):
            return found.group(0)
    return requirement


def _main_dependency(requirement: str) -> str:
    return f"{SETUP} installs it, or {PIP} '{pinned(requirement)}'"


# module -> how it gets installed
INSTALL: dict[str, Callable[[], str]] = {
    "scienceworld": lambda: _main_dependency("scienceworld"),
    "alfworld": lambda: _main_dependency("alfworld"),
    "textworld": lambda: _main_dependency("textworld"),
    "bfcl_eval": lambda: f"{SETUP} installs it, or {PIP} --no-deps '{pinned('bfcl-eval')}' mpmath",
    "langmem": lambda: f"{SETUP_TEST} installs the langmem extra, or {PIP} -e '.[langmem]'",
}


def missing(*modules: str) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def need_module(name: str, hint: str | None = None) -> None:
    """Fail unless ``name`` imports; the message says how to install it."""
    if missing(name):
        fix = hint or (INSTALL[name]() if name in INSTALL else f"{PIP} {name}")
        pytest.fail(f"the Python package {name!r} is not installed: {fix}", pytrace=False)


def need_java() -> None:
    """ScienceWorld's simulator is a jar: fail unless ``java`` is on PATH."""
    if shutil.which("java") is None:
        pytest.fail(
            "ScienceWorld's simulator needs Java 8 or newer (tested with 17) and there is no "
            "`java` on PATH: "
            "sudo apt-get install -y openjdk-17-jre-headless (Debian/Ubuntu), or "
            "conda install -c conda-forge openjdk=17 (environment.yml lists it)",
            pytrace=False,
        )


def need_scienceworld() -> None:
    need_module("scienceworld")
    need_java()


def need_alfworld() -> None:
    need_module("alfworld")
    need_module("textworld")


def need_appworld_venv() -> Path:
    """AppWorld's own venv (it pins pydantic<2): its python, once ``make appworld`` built it."""
    python, cli = APPWORLD_VENV / "bin" / "python", APPWORLD_VENV / "bin" / "appworld"
    if not python.is_file() or not cli.is_file():
        absent = python if not python.is_file() else cli
        pytest.fail(
            f"AppWorld's venv is not built ({os.path.relpath(absent, ROOT)} is absent): "
            "`make appworld` (bash scripts/setup_appworld.sh, ~40 s; `make test` builds it)",
            pytrace=False,
        )
    return python


# llama-cpp-python's server and its [server] extra, and the client the tests drive it with
LLAMA_SERVER_MODULES = (
    "llama_cpp",
    "pydantic_settings",
    "sse_starlette",
    "starlette_context",
    "uvicorn",
    "openai",
)


def need_llama_cpp_server() -> None:
    """The tests' real OpenAI-compatible server: a portable llama-cpp-python[server] build."""
    if absent := missing(*LLAMA_SERVER_MODULES):
        pytest.fail(
            f"the tests' OpenAI-compatible server is not installed (missing {', '.join(absent)}):"
            f" {SETUP_TEST} builds llama-cpp-python[server], or VENV=.venv bash "
            "scripts/build_llama_cpp.sh",
            pytrace=False,
        )


def module_needs(*checks: Callable[[], object] | str) -> Callable:
    """An autouse module fixture running ``checks`` (a module name stands for
    :func:`need_module` of it): assign it in a test module (``_needs =
    module_needs(need_scienceworld)``, ``module_needs("bfcl_eval")``) and each test there fails
    at set-up with the check's message, instead of the module being skipped or failing to
    collect."""

    @pytest.fixture(scope="module", autouse=True)
    def _needs() -> None:
        for check in checks:
            if isinstance(check, str):
                need_module(check)
            else:
                check()

    return _needs
