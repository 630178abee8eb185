"""``python run.py --list [group]`` (issue 51, 7): every config group, or one group's options
each with the one-line description its file opens with, as ``lm-eval ls tasks`` lists tasks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import CONF, ROOT
from memarena.conf_options import LINE, defaults, describe, listing
from memarena.config_check import config_groups, group_options

GROUPS = [g for g in config_groups(CONF) if g != "local"]


def test_the_group_listing_names_every_group_and_its_default():
    text = listing(None, CONF)
    chosen = defaults(CONF)
    for group in GROUPS:
        assert any(line.startswith(f"{group} ") and f"(default: {chosen[group]})" in line
                   for line in text.splitlines()), group  # fmt: skip


@pytest.mark.parametrize("group", GROUPS)
def test_every_option_is_listed_with_its_own_description(group):
    """A conf file that opens without a comment saying what it is fails here."""
    lines = listing(group, CONF).splitlines()[1:]
    options = group_options(CONF, group)
    assert [line.split()[0] for line in lines] == options
    for option, line in zip(options, lines, strict=True):
        text = describe(CONF, group, option)
        assert text and len(text) <= LINE, f"conf/{group}/{option}.yaml: {text!r}"
        assert line.endswith(text)


def test_a_description_is_the_first_sentence_not_cut_inside_parentheses():
    assert describe(CONF, "method", "voyager").startswith("Voyager's skill library (Wang et al. 2023;")
    assert describe(CONF, "method", "none") == (
        "No memory: the agent acts from the task and its own history only."
    )
    assert "(default)" in next(line for line in listing("method", CONF).splitlines()
                               if line.startswith("memco "))  # fmt: skip


def test_run_py_lists_and_refuses_an_unknown_group():
    def run(*args):
        return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)  # fmt: skip

    ok = run("--list", "launcher")
    assert ok.returncode == 0 and "submitit_local" in ok.stdout and "Slurm" in ok.stdout
    bad = run("--list", "methods")
    assert bad.returncode == 2 and "no config group 'methods'" in bad.stderr
    assert "method, paths" in bad.stderr
