"""Real runs built once per test session and shared by every test that asserts on them.

A real run (``python run.py`` with the embedded model, a results tree for the notebooks) takes
minutes on a 2-core CPU; many tests read the same one. ``build_once(tmp_path_factory, name,
build)`` builds it the first time any test asks, in a folder every pytest-xdist worker of the
session sees (the workers' temporary folders are siblings; without xdist the session's own
folder), under a file lock: a worker that asks while another builds waits and then reads the
same files. A build that fails fails every test that asks for it, with the first failure's
message, instead of being rebuilt by each. Nothing is kept across sessions.

Tests that share a run carry ``@pytest.mark.xdist_group(<name>)`` so that ``--dist loadgroup``
sends them to one worker, which builds the run while the other workers run other tests.
"""

from __future__ import annotations

import os
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

BUILT = ".built"


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # popen-gw0, popen-gw1, ... are siblings in the session's folder
    path = base / "shared_runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder of the shared run ``name``, built by ``build(folder)`` on first use."""
    root = shared_dir(tmp_path_factory) / name
    failed = root.with_name(f"{name}.failed")
    with FileLock(f"{root}.lock"):
        if failed.exists():
            pytest.fail(f"the shared run {name!r} failed when it was built:\n{failed.read_text()}")
        if (root / BUILT).exists():
            return root
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        try:
            build(root)
        except BaseException as err:  # pytest.fail's outcome is a BaseException
            if not isinstance(err, KeyboardInterrupt):
                failed.write_text("".join(traceback.format_exception(err))[-6000:])
            raise
        (root / BUILT).touch()
    return root
