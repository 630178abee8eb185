"""Every command the README and docs/ show works as written: the ones that start work and can
run here run as typed at the size the page gives (:data:`RUN_HERE`; the others run in the test
named in :data:`RUN_ELSEWHERE`); each ``python run.py ...`` line passes the config pre-check and
composes (what ``python run.py ARGS --cfg job`` does, in this
process: :func:`memarena.config_check.plan_overrides`, then for ``-m`` the first cell of the
sweep, the experiment's own ``hydra.sweeper.params`` included); each ``make ...`` line names a
Makefile target; every relative link and every repository path in backticks exists.

A placeholder (``<name>``, ``...``) cannot compose: its argument is left out and the rest of the
line is checked."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from conftest import CONF, ROOT, compose_cfg
from memarena.cli import command_line_overrides
from memarena.config_check import expand_group_shorthand, plan_overrides

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```(?:bash|sh)?\n(.*?)```", re.S)
INLINE = re.compile(r"`((?:python|make) [^`]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
REPO_PATH = re.compile(
    r"`((?:scripts|src|conf|docs|tests|benchmarks|notebooks|experiments)/[\w./-]+"
    r"\.(?:py|yaml|md|ipynb|sh|txt|json))`"
)


def _commands(page: Path) -> list[tuple[str, str]]:
    """(``page:line``, command) for every run.py / make command of ``page``: the lines of its
    code blocks (continuations joined, comments cut) and the inline ones in its prose."""
    text = page.read_text(encoding="utf-8")
    out = []
    for block in FENCE.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        joined, start = "", None
        for i, line in enumerate(block.group(1).splitlines()):
            start = first_line + i if not joined else start
            line = line.split(" #", 1)[0].rstrip() if not line.startswith("#") else ""
            if line.endswith("\\"):
                joined += line[:-1] + " "
                continue
            joined += line
            if re.search(r"(^|\s)(python run\.py|make) ", joined + " "):
                out.append((f"{page.name}:{start}", joined.strip()))
            joined = ""
    for match in INLINE.finditer(text):
        line_no = text.count("\n", 0, match.start()) + 1
        command = match.group(1)
        if command.startswith("python run.py") or command.startswith("make "):
            out.append((f"{page.name}:{line_no}", command))
    return out


COMMANDS = [c for page in PAGES for c in _commands(page)]


def _placeholder(arg: str) -> bool:
    """``<name>``, ``...``, ``key=...``, ``key=DIR`` / ``method=M`` (capitals: a name to fill)."""
    value = arg.split("=", 1)[1] if "=" in arg else ""
    filled = value == "..." or bool(re.fullmatch("[A-Z_]+", value))
    return "<" in arg or arg.strip(".") == "" or filled


def _first_cell(overrides: list[str]) -> list[str]:
    """The overrides of a sweep's first job: the first value of each swept override."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    for ov in OverridesParser.create().parse_overrides(overrides):
        if ov.is_sweep_override():
            first = next(iter(ov.sweep_string_iterator()))
            out.append(f"{ov.get_key_element()}={first}")
        else:
            out.append(ov.input_line)
    return out


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_command_in_the_docs_composes(where, command):
    words = shlex.split(re.sub(r"<[^>]*>", "<x>", command).replace("`", ""))
    if "make" in words and "run.py" not in " ".join(words):
        target = words[words.index("make") + 1 :]
        names = [w for w in target if "=" not in w] or ["(default)"]
        makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
        for name in names:
            assert re.search(rf"^{re.escape(name)}:", makefile, re.M), f"{where}: no make {name}"
        return
    argv = words[words.index("run.py") + 1 :]
    if "--list" in argv:  # prints a listing, composes nothing
        from memarena.cli import list_options

        argv = [a for a in argv if not _placeholder(a)]  # --list <group>: the groups
        assert list_options(argv, CONF) == 0, f"{where}: {command}"
        return
    argv = expand_group_shorthand([a for a in argv if not _placeholder(a)])
    overrides = command_line_overrides(argv)
    multirun = "-m" in argv or "--multirun" in argv
    shows = "--cfg" in argv
    plan = plan_overrides(overrides, CONF, multirun=multirun or shows)
    assert plan.error is None, f"{where}: {command}\n{plan.error}"
    if multirun:  # the sweep's first cell, with the experiment's own sweep
        cell = _first_cell([plan.rewrites.get(o, o) for o in overrides])
        cfg = compose_cfg(cell, return_hydra_config=True)
        given = {o.split("=", 1)[0].lstrip("+~") for o in cell}
        params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
        extra = _first_cell([f"{k}={v}" for k, v in params.items() if str(k) not in given])
        if extra:
            compose_cfg([*cell, *extra])


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_linked_path_exists(page):
    text = page.read_text(encoding="utf-8")
    missing = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # a URL
            continue
        if not (page.parent / target).exists():
            missing.append(target)
    for path in REPO_PATH.findall(text):
        if not path.startswith("conf/local/") and not (ROOT / path).exists():  # local: yours
            missing.append(path)
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_readme_is_short_and_in_the_order_a_user_needs():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # 260 lines of prose and commands plus the two measured tables the README must show: what
    # each paper experiment costs (29 rows) and the recall sanity check (13 rows)
    assert len(text.splitlines()) <= 305
    heads = re.findall(r"^## (.+)$", text, re.M)
    order = ["Two commands", "What the demo printed", "Reproduce a paper table", "Compare methods",
             "Configuration", "Clusters", "Extending", "Speed"]  # fmt: skip
    found = [next(i for i, h in enumerate(heads) if h.startswith(o)) for o in order]
    assert found == sorted(found), heads
    assert COMMANDS, "no command found"


# -- the documented commands that start work, run as typed ---------------------------------------
#
# Each is taken verbatim from its page (the test fails when the page no longer shows it) and run
# from a temporary working directory, so the default folders (results/, .cache/, outputs/) land
# there. The only test-only overrides, which change where things are written and nothing a
# command exercises: paths.results_dir=<cwd>/results (the default, spelled out: run_py insists
# on a temporary results folder) and paths.llm_cache inside it (run_py's). The scripts' own
# arguments (`results`) name that same folder. Commands that need a GPU, a model download,
# paper data or minutes of CPU are composed above, not run: the demo and paper experiments
# (embedded model / GPUs / data), `make run` / `make test` (set-up), serve (a GPU). Ray's
# documented command runs in tests/test_launchers.py (a Ray head in a network namespace).

RUN_HERE = [  # (page, command as written there): about 25 s together
    ("README.md", "python run.py method=icl env=pddl backbone=scripted"),
    ("README.md", "python run.py -m method=none,icl env=pddl seed=0,1 backbone=scripted"),
    ("README.md", "python scripts/view_runs.py results"),
    ("README.md", "python scripts/make_tables.py --results-dir results --out results/tables"),
]
# documented commands that start work and run, at a tiny size, in another test (as typed here
# they would cost ~30 s each: the joblib pool's start-up; Hydra composing the table's 63 jobs)
RUN_ELSEWHERE = {
    "python run.py -m method=none,icl env=pddl backbone=scripted launcher=joblib "
    "hydra.launcher.n_jobs=2": "test_launchers.py::test_joblib_sweep_on_one_empty_cache",
    "python run.py -m experiment=memco_table1_alfworld launcher=slurm hydra.launcher.dry_run=true":
        "test_launchers.py::test_slurm_dry_run_shows_each_backbones_resources",
    "python run.py -m launcher=ray hydra.launcher.ray.init.address=auto ...":
        "test_launchers.py::test_ray_sweep_as_typed_on_a_running_cluster",
}  # fmt: skip


def _joined(path: Path) -> str:
    return re.sub(r"\\\n\s*", "", path.read_text(encoding="utf-8"))  # continuations joined


def _shown(text: str, command: str) -> bool:
    words = command.replace(" ...", "").split()
    return re.search(r"\s+".join(map(re.escape, words)), text) is not None


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    """Run RUN_HERE in order in one working directory (the sweep resumes the first run's
    records: the same cell); {command: CompletedProcess}."""
    from conftest import run_py, run_script

    cwd = tmp_path_factory.mktemp("typed")
    extra = [f"paths.results_dir={cwd / 'results'}"]
    out = {}
    for _page, command in RUN_HERE:
        words = shlex.split(command)
        if words[1] == "run.py":
            out[command] = run_py([*words[2:], *extra], cwd=cwd, timeout=300)
        else:
            out[command] = run_script(ROOT / words[1], words[2:], cwd=cwd, timeout=300)
    return cwd, out


@pytest.mark.xdist_group("readme_typed")  # one worker runs the shared commands once
@pytest.mark.parametrize(("page", "command"), RUN_HERE, ids=[c[:60] for _, c in RUN_HERE])
def test_a_documented_command_runs_as_typed(typed, page, command):
    path = ROOT / page if page == "README.md" else ROOT / "docs" / page
    assert _shown(_joined(path), command), f"{page} no longer shows `{command}`: update RUN_HERE"
    cwd, procs = typed
    proc = procs[command]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if "make_tables" in command:  # capped, scripted runs are no paper cells: refused, named
        assert proc.returncode == 2 and "4 of 4 runs are flagged" in proc.stderr, proc.stderr
        assert "--allow-flagged" in proc.stderr
        return
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    if " -m " in command:
        assert "memarena: sweep of 4 job(s), 0 failed" in proc.stdout, proc.stdout[-3000:]
        assert (cwd / "outputs" / "multiruns").is_dir()  # the default sweep folder, here
    if "view_runs" in command:
        assert (cwd / "results" / "runs.html").is_file()


def test_the_commands_run_elsewhere_are_still_shown():
    text = "\n".join(_joined(page) for page in PAGES)
    for command in RUN_ELSEWHERE:
        assert _shown(text, command), f"no page shows `{command}` any more: update RUN_ELSEWHERE"


def test_the_readme_stand_in_command_for_a_paper_cell_runs(tmp_path):
    """The README's one-cell check of a paper experiment runs as written (issue 51, 6: it exited
    2 asking for env.problems_dir); only where it writes is added."""
    from conftest import run_py

    (command,) = [c for _, c in _commands(ROOT / "README.md")
                  if "experiment=memco_table1_pddl backbone=scripted" in c]  # fmt: skip
    argv = shlex.split(command)[2:]
    proc = run_py([*argv, "logger=none", f"paths.results_dir={tmp_path}"], timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (metrics,) = tmp_path.rglob("metrics.json")
    assert "stand_in_data" in metrics.read_text()
