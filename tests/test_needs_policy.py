"""The suite's rule for missing dependencies (tests/needs.py): a test that needs a package
`make test` installs fails naming the fix, it never skips. Only what the machine decides may skip
(a GPU present or not; vLLM, which lives in the second venv of `make test-all`)."""

from __future__ import annotations

import re

from conftest import ROOT

SKIPPING = re.compile(r"importorskip\(|skipif\([^)]*find_spec\(\s*\"(?P<module>[\w.]+)\"", re.S)
MACHINE_DECIDES = {"vllm"}  # the second venv (make test-all), not make test's


def test_no_test_skips_for_a_package_make_test_installs():
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "needs.py":
            continue
        for match in SKIPPING.finditer(path.read_text(encoding="utf-8")):
            if match.group("module") not in MACHINE_DECIDES:
                line = path.read_text(encoding="utf-8")[: match.start()].count("\n") + 1
                found.append(f"{path.relative_to(ROOT)}:{line}")
    assert not found, (
        "these skip when a package is missing; use tests/needs.py (need_module / module_needs) "
        f"so the test fails naming the fix: {found}"
    )
