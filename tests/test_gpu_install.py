"""The GPU install path resolves (issue 51, 5): vllm==0.33.0 (the vllm extra) requires
torch==2.14.0, and scripts/setup.sh --gpu installs exactly that torch with the extra. The pins
agree across pyproject.toml, setup.sh and docs/setup.md (fast), and pip resolves the extra with
that torch without a conflict (a dry run against the package registry: metadata only, no CUDA
wheel downloaded; bounded in time; an unreachable registry fails, as tests/needs.py wants)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT


def _pins() -> tuple[str, str]:
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    (torch,) = re.findall(r'^GPU_TORCH_SPEC="torch==([\w.]+)"', setup, re.M)
    (vllm,) = re.findall(r'vllm = \["vllm==([\w.]+)"\]', (ROOT / "pyproject.toml").read_text())
    return torch, vllm


def test_the_gpu_pins_agree_across_setup_pyproject_and_docs():
    torch, vllm = _pins()
    docs = (ROOT / "docs" / "setup.md").read_text()
    assert f"vllm=={vllm}" in docs and f"torch=={torch}" in docs
    assert f'pip install "torch=={torch}" && pip install -e ".[vllm]"' in docs
    assert "bash scripts/setup.sh --gpu" in docs
    assert f"what vllm=={vllm}" in (ROOT / "scripts" / "setup.sh").read_text()
    low, high = re.search(r'"torch>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text()
                          ).groups()  # fmt: skip
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(low) <= as_tuple(torch) < as_tuple(high), "pyproject's torch range excludes it"


@pytest.mark.slow
def test_pip_resolves_the_vllm_extra_with_the_gpu_torch(tmp_path):
    torch, vllm = _pins()
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--report", str(report), f"{ROOT}[vllm]", f"torch=={torch}"],
        capture_output=True, text=True, timeout=420,
    )  # fmt: skip
    assert proc.returncode == 0, f"pip could not resolve .[vllm] with torch=={torch}:\n" + (
        proc.stderr[-3000:]
    )
    chosen = {i["metadata"]["name"].lower(): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}  # fmt: skip
    assert chosen["vllm"] == vllm and chosen["torch"] == torch
