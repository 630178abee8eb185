"""`make test`'s scheduling: tests that share a run (one xdist_group) run on one worker.

pytest 9.2 derives node ids from a structured id that pytest-xdist 3.8 cannot tag with the
group, and then splits a group across workers, each building the shared run (pyproject.toml
pins pytest below 9.2 for that). This runs a small suite the way `make test` does.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent("""
        import pytest
        pytestmark = pytest.mark.xdist_group("shared")
        @pytest.mark.parametrize("i", range(6))
        def test_member(i): pass
    """))
    (tmp_path / "test_other.py").write_text("def test_a(): pass\ndef test_b(): pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist",
         "loadgroup", "-v", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:]
    workers = set(re.findall(r"\[(gw\d)\].*PASSED .*test_member", proc.stdout))
    assert len(re.findall(r"PASSED .*test_member", proc.stdout)) == 6
    assert len(workers) == 1, proc.stdout
