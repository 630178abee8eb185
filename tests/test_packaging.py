"""environment.yml and pyproject.toml list the same dependencies; the repo has its layout."""

from __future__ import annotations

import tomllib

import yaml

from conftest import ROOT


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    return set(project["dependencies"]) | set(extras["dev"]) | set(extras["langmem"])


def _environment_requirements() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml needs exactly one pip: section"
    return {r for r in pip_lists[0] if not r.startswith("-e")}


def test_environment_yml_matches_pyproject():
    ours, conda = _pyproject_requirements(), _environment_requirements()
    assert ours == conda, (
        f"only in pyproject: {sorted(ours - conda)}; "
        f"only in environment.yml: {sorted(conda - ours)}"
    )


def test_top_level_layout():
    for name in (
        "conf",
        "src",
        "experiments",
        "notebooks",
        "scripts",
        "results",
        "tests",
        "environment.yml",
        "README.md",
        "run.py",
        "Makefile",
        ".ci/run",
        "pyproject.toml",
    ):
        assert (ROOT / name).exists(), name
