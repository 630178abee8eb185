"""AppWorld's data root read from the main venv (plain files, no appworld import).

The official download (``appworld download data``) holds, under ``<root>/data/``:
``datasets/<split>.txt`` (task ids, one a line: train 90, dev 57, test_normal 168,
test_challenge 417), ``tasks/<task_id>/specs.json`` (instruction, supervisor, datetime,
db_version), ``tasks/<task_id>/ground_truth/`` (``compiled_solution.py`` / ``solution.py`` with
``def solution(apis, requester)`` where the release includes them: train and dev), ``base_dbs/``
and ``api_docs/``. A task id is ``<scenario>_<n>``: the tasks of one scenario share a generator,
and Scenario Goal Completion asks for all of them.

:func:`check_setup` is the one place that says what is missing and how to fix it.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError

SPLITS = ("train", "dev", "test_normal", "test_challenge")
SETUP_HINT = "make appworld (or: bash scripts/setup_appworld.sh)"


def check_setup(python: str, root: str | None, *, what: str = "env.root") -> None:
    """One ConfigError naming the fix when the AppWorld venv or the data root is missing."""
    if not Path(python).is_file():
        raise ConfigError(
            f"memarena: env=appworld needs AppWorld's own virtual environment (its package pins "
            f"pydantic<2): no python at {python} (env.python). Create it with `{SETUP_HINT}`, "
            "or point env.python at the python of a venv where `pip install appworld==0.1.3.post1"
            " && appworld install` ran."
        )
    if root is None:
        return
    data = Path(root) / "data"
    if not (data / "datasets").is_dir() or not (data / "tasks").is_dir():
        raise ConfigError(
            f"memarena: env=appworld has no AppWorld data at {data} ({what}): expected "
            "data/datasets/<split>.txt and data/tasks/<task_id>/. Download it on a machine with "
            "internet (`appworld download data --root DIR` in the AppWorld venv) and set "
            "env.root=DIR (or APPWORLD_ROOT=DIR); env.root=null with env.require_data=false "
            "runs the small offline smoke root instead (results under appworld_smoke)."
        )


def task_ids(root: str, split: str) -> list[str]:
    path = Path(root) / "data" / "datasets" / f"{split}.txt"
    if not path.is_file():
        have = sorted(p.stem for p in path.parent.glob("*.txt"))
        raise ConfigError(
            f"memarena: env=appworld: no split {split!r} in {path.parent} (has {have}); "
            f"AppWorld's splits: {list(SPLITS)} (env.splits)."
        )
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def task_specs(root: str, task_id: str) -> dict[str, Any]:
    """``specs.json`` of a task ({} when absent or unreadable: the server gives the same facts
    at reset)."""
    path = Path(root) / "data" / "tasks" / task_id / "specs.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def solution_code(root: str, task_id: str) -> str | None:
    """The task's ground-truth program, the code AppWorld's own ``appworld verify tasks`` runs
    (``compiled_solution.py``, else ``solution.py``), or None when the release has none."""
    directory = Path(root) / "data" / "tasks" / task_id / "ground_truth"
    for name in ("compiled_solution.py", "solution.py"):
        path = directory / name
        if path.is_file():
            lines = [ln for ln in path.read_text().splitlines() if "canary" not in ln.lower()]
            code = "\n".join(lines).strip()
            if "def solution" in code:
                return code
    return None


def scenario_of(task_id: str) -> str:
    """``"82e2fac_1"`` -> ``"82e2fac"`` (AppWorld's task_id_to_generator_id)."""
    return task_id.rsplit("_", 1)[0] if "_" in task_id else task_id


@cache
def app_descriptions(python: str) -> dict[str, str]:
    """``appworld.apps.APP_TO_DESCRIPTION`` read from the AppWorld venv (name -> description)."""
    code = "import json; from appworld.apps import APP_TO_DESCRIPTION as d; print(json.dumps(d))"
    try:
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        return dict(json.loads(out.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {}


SMOKE_SCRIPT = Path(__file__).with_name("smoke_root.py")


def build_smoke_root(python: str, out: str) -> str:
    """The offline smoke root (``smoke_root.py``, run in the AppWorld venv) at ``out``, built
    once; returns ``out``. The script runs every time: it checks a built root against its
    manifest under the cache lock (~0.1 s) and rebuilds one that does not verify."""
    marker = Path(out) / "data" / ".memarena_smoke"
    proc = subprocess.run(
        [python, str(SMOKE_SCRIPT), out], capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0 or not marker.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ConfigError(
            f"memarena: env=appworld could not build the offline smoke root at {out} with "
            f"{python} {SMOKE_SCRIPT.name} (exit code {proc.returncode}):\n{tail}\n"
            f"Rebuild the AppWorld venv (`{SETUP_HINT}`) or set env.root to the official data."
        )
    return out
