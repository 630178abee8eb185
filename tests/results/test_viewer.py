"""The trajectory viewer (scripts/view_runs.py, memarena.results.viewer): the memory it marks at
the offsets the prompt builder recorded, the memory text it finds for an id, its escaping, old
runs without recorded offsets, and the page over a results tree the real pipeline wrote, opened
in the system's headless Chromium and used as a reader would: the runs list filtered and
sorted, run -> episode -> prompt, and the comparison of two runs task by task (two team runs,
their agent views collapsed into a column a run, in a 1400 px window).

The browser is the Debian package ``chromium`` driven by Playwright (the ``dev`` extra);
``scripts/setup.sh --test`` installs both. Without them the browser test fails with the hint,
it never skips."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT, run_py, run_script
from memarena.memory.memco.compose import HEADER as MEMCO_HEADER
from memarena.results.view_memory import find_texts, marked
from memarena.results.viewer import read_episodes, render_page

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = (
    "the viewer's browser test needs the system Chromium and Playwright: run "
    "`bash scripts/setup.sh --test` (as root it runs `apt-get install -y "
    "--no-install-recommends chromium`; otherwise install the Debian package `chromium` "
    "yourself) and `pip install -e '.[dev]'` for playwright"
)
LONG_FLAGS = [f"a_rather_long_flag_name_number_{i}" for i in range(8)]


def test_marked_wraps_each_recorded_span_and_escapes_every_text():
    text = "<b>obs</b>\n\n### Memory\n<script>x</script>\n\nYour task: t"
    start = text.index("### Memory")
    end = text.index("\n\nYour task")
    out = marked(text, [(start, end, "slot<1>")])
    assert "<script>" not in out and "<b>" not in out
    assert out == (
        '&lt;b&gt;obs&lt;/b&gt;\n\n<mark class="memory" data-slot="slot&lt;1&gt;">### Memory\n'
        "&lt;script&gt;x&lt;/script&gt;</mark>\n\nYour task: t"
    )
    # no spans (an old run), an empty or out-of-range span: no mark
    assert marked(text, []) == marked(text, [(5, 5, "s"), (999, 1000, "s")])
    assert "<mark" not in marked(text, [])


def test_find_texts_reads_the_text_of_each_id_from_any_snapshot_shape():
    state = {
        "notes": [{"id": "n1", "content": "use the key", "embedding": [0.1] * 20}],
        "items": {"e7": {"kind": "tip", "text": "check the drawer"}},
        "skills": [{"name": "open_fridge", "code": "def open_fridge(): ..."}],
        "other": {"id": "x", "score": 2},
    }
    found = find_texts(state, ["n1", "e7", "open_fridge", "x", "absent"])
    assert found == {
        "n1": "use the key",
        "e7": "check the drawer",
        "open_fridge": "def open_fridge(): ...",
        "x": '{"id": "x", "score": 2}',
    }


def _record(task_id: str, steps: list[dict], **fields) -> dict:
    """An evaluated episode record of ``steps`` (``fields``: agent, run, success, ...)."""
    record = {"success": False, "progress": 0.5, "status": "failure", **fields}
    return {
        "task_id": task_id,
        "steps": len(steps),
        **record,
        "trajectory": {
            "task": {"id": task_id, "env": "pddl", "split": "test", "domain": "d", "goal": "g"},
            "initial_observation": "start",
            "steps": steps,
        },
    }


def _write_run(run: Path, records: list[dict], metrics: dict) -> Path:
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def _compare_data(page: str) -> dict:
    """The comparison view's JSON in the page."""
    data = page.split('<script id="compare-data" type="application/json">')[1]
    return json.loads(data.split("</script>")[0])


def _hand_run(root: Path, step: dict) -> Path:
    run = root / "exp" / "pddl" / "none" / "scripted-expert-eps0.1" / "seed0"
    metrics = {"success_rate": 0.0, "flags": ["capped"]}
    return _write_run(run, [_record("t<1>", [step])], metrics)


def test_page_of_a_hand_written_run_escapes_and_says_prompts_are_missing(tmp_path):
    step = {
        "action": "<img src=x onerror=alert(1)>",
        "observation": "a </pre> b",
        "reward": 0.0,
        "progress": 0.5,
        "feedback": {"valid_action": False, "state_changed": False, "failure_label": "parse"},
    }
    _hand_run(tmp_path, step)
    page = render_page(tmp_path)
    assert "<img" not in page and "a </pre> b" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "t&lt;1&gt;" in page
    assert "protocol.record_prompts=true" in page and "(parse)" in page
    assert 'href="#ep-0-0"' in page
    # the comparison data is JSON in a script element no run text can end
    data = page.split('<script id="compare-data" type="application/json">')[1]
    assert "</script>" in data and "<img" not in data.split("</script>")[0]


def test_a_step_without_recorded_memory_says_so_not_no_memory(tmp_path):
    """A step recorded without its memory ids (a run made before they were always kept, with
    protocol.record_memory=false) does not know what it showed: the viewer says so, in the
    episode's steps and in the comparison data, instead of "no memory shown"; a step that
    recorded it showed nothing (ids []) keeps "none"."""
    step = {"action": "a", "observation": "o", "reward": 0.0, "progress": 0.0,
            "feedback": {"valid_action": True, "state_changed": True}}  # fmt: skip
    _hand_run(tmp_path / "old", step)
    page = render_page(tmp_path / "old")
    cell = '<span class="note">memory not recorded (protocol.record_memory=false)</span>'
    assert cell in page
    (episode,) = _compare_data(page)["episodes"]
    assert episode["steps"][0]["rec"] is False
    _hand_run(tmp_path / "new", {**step, "memory_ids": []})
    page = render_page(tmp_path / "new")
    assert cell not in page and '<span class="none">none</span>' in page


def test_an_old_run_without_memory_spans_renders_unmarked_with_a_note(tmp_path):
    prompt = [{"role": "user", "content": f"x\n\n{MEMCO_HEADER}\nNext priority: y"}]
    step = {
        "action": "a",
        "observation": "o",
        "reward": 0.0,
        "progress": 0.0,
        "feedback": {"valid_action": True, "state_changed": True},
        "prompt": prompt,
        "memory_ids": ["m1"],
    }
    run = _hand_run(tmp_path, step)
    page = render_page(tmp_path)
    assert "<mark" not in page and "memory_spans" in page  # the note names what is missing
    assert MEMCO_HEADER in page
    # the same step with its span recorded: marked
    start = prompt[0]["content"].index(MEMCO_HEADER)
    step["memory_spans"] = [
        {"message": 0, "slot": "memco", "start": start, "end": len(prompt[0]["content"])}
    ]
    record = json.loads((run / "episodes.jsonl").read_text())
    record["trajectory"]["steps"] = [step]
    (run / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    page = render_page(tmp_path)
    assert f'<mark class="memory" data-slot="memco">{MEMCO_HEADER}' in page
    assert "before the prompt builder recorded" not in page


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Runs the real pipeline wrote with their prompts and memory: MemCo and no memory on the
    same two tasks (the scripted expert acts alike in both), no memory again with a noisier
    expert (its trajectories differ), and a hand-written run with many long flags."""
    root = tmp_path_factory.mktemp("viewer_results")
    common = [
        "env=pddl",
        "backbone=scripted",
        "protocol.max_train_tasks=3",
        "protocol.max_eval_tasks=2",
        "protocol.record_prompts=true",
        "protocol.record_memory=true",
        "experiment_name=viewer",
        "logger=none",
        f"paths.results_dir={root}",
    ]
    for args in (["-m", "method=memco,none"], ["method=none", "backbone.epsilon=0.6"]):
        proc = run_py([*args, *common])
        assert proc.returncode == 0, proc.stderr[-3000:]
    flagged = root / "viewer" / "pddl_generated" / "icl" / "scripted-expert-eps0.1" / "seed0"
    flagged.mkdir(parents=True)
    (flagged / "metrics.json").write_text(json.dumps({"success_rate": 0.0, "flags": LONG_FLAGS}))
    return root


def _browser(playwright):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found; {INSTALL_HINT}")
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])


def _run_dir(results: Path, method: str, backbone: str = "scripted-expert-eps0.1") -> Path:
    return next(results.rglob(f"{method}/{backbone}/seed0"))


def _divergence(columns: list[list[str]]) -> int:
    """The first step at which the actions differ (an ended trajectory differs), else -1."""
    for k in range(max(map(len, columns))):
        if len({tuple(c[k : k + 1]) for c in columns}) > 1:
            return k
    return -1


@pytest.fixture(scope="module")
def page_file(results, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("viewer_page") / "runs.html"
    proc = run_script(ROOT / "scripts" / "view_runs.py", [results, "--out", out], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed; {INSTALL_HINT}")
    with sync_playwright() as p:
        browser = _browser(p)
        yield browser
        browser.close()


@contextmanager
def _opened(browser, path: Path):
    """The page at ``path`` in a 1400 px wide window; at the end: no script error, nothing
    fetched."""
    requests: list[str] = []
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    yield page
    page.close()
    assert not errors, errors
    # self-contained: the page fetched nothing but itself
    assert requests and all(u.startswith("file://") for u in requests), requests


@pytest.fixture
def page(browser, page_file):
    with _opened(browser, page_file) as page:
        yield page


def test_runs_list_fits_1400px_filters_and_sorts_in_headless_chromium(page):
    from playwright.sync_api import expect

    runs = page.locator("#runs")
    expect(runs).to_be_visible()
    rows = runs.locator("table.runs tbody tr")
    expect(rows).to_have_count(4)
    expect(runs).to_contain_text("scripted-expert-eps0.6")
    expect(runs).to_contain_text("success_rate")
    # the table fits a 1400 px window; the long flags wrap inside it, the last one in view
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    box = runs.locator("td.flags", has_text=LONG_FLAGS[-1]).bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1400, box
    expect(runs.locator("td.flags", has_text=LONG_FLAGS[-1])).to_contain_text(LONG_FLAGS[-1])

    filters = runs.locator(".filters")
    filters.locator('select[data-key="method"]').select_option("none")
    expect(rows.locator("visible=true")).to_have_count(2)
    expect(filters.locator(".count")).to_have_text("2 of 4 shown")
    filters.locator('select[data-key="method"]').select_option("")
    filters.locator('select[data-key="flags"]').select_option(LONG_FLAGS[3])
    expect(rows.locator("visible=true")).to_have_count(1)
    filters.locator('select[data-key="flags"]').select_option("capped")
    expect(rows.locator("visible=true")).to_have_count(3)
    filters.locator('select[data-key="success"]').select_option("none")  # success rate 0
    expect(rows.locator("visible=true")).to_have_count(0)
    filters.locator('select[data-key="flags"]').select_option("")
    expect(rows.locator("visible=true")).to_have_count(1)  # the flagged run: 0.0
    filters.locator('select[data-key="success"]').select_option("")
    filters.locator('select[data-key="env"]').select_option("pddl_generated")
    filters.locator("input.filter-text").fill("eps0.6")
    expect(rows.locator("visible=true")).to_have_count(1)
    filters.locator("input.filter-text").fill("")
    expect(rows.locator("visible=true")).to_have_count(4)

    # sorted by success rate, ascending then descending
    header = runs.locator("table.runs thead th", has_text="success_rate")
    col = header.evaluate("th => Array.from(th.parentNode.children).indexOf(th)")
    rates = f"Array.from(document.querySelectorAll('table.runs tbody tr')).map(r => r.cells[{col}].textContent)"  # noqa: E501
    header.click()
    assert page.evaluate(rates) == ["0.000", "0.500", "1.000", "1.000"]
    header.click()
    assert page.evaluate(rates) == ["1.000", "1.000", "0.500", "0.000"]


def test_run_and_episode_views_show_the_memory_each_step_showed(page, results):
    from playwright.sync_api import expect

    memco_dir = _run_dir(results, "memco")
    episodes = read_episodes(memco_dir)
    # an evaluated episode whose first step was shown memory
    j, record = next(
        (j, r)
        for j, (ph, r) in enumerate(episodes)
        if ph == "evaluation" and r.trajectory["steps"][0].get("memory_ids")
    )
    first = record.trajectory["steps"][0]

    page.locator("#runs a.run-link", has_text="memco").click()
    run_view = page.locator(".view.shown")
    expect(page.locator("#runs")).to_be_hidden()
    expect(run_view.locator("h2")).to_contain_text("viewer / pddl_generated / memco")
    ep_rows = run_view.locator("table.episodes tbody tr")
    expect(ep_rows).to_have_count(len(episodes))
    # the episodes filtered by phase and agent
    filters = run_view.locator(".filters")
    filters.locator('select[data-key="phase"]').select_option("evaluation")
    n_eval = sum(ph == "evaluation" for ph, _ in episodes)
    expect(ep_rows.locator("visible=true")).to_have_count(n_eval)
    filters.locator('select[data-key="agent"]').select_option(record.agent)
    expect(ep_rows.locator("visible=true")).to_have_count(
        sum(ph == "evaluation" and r.agent == record.agent for ph, r in episodes)
    )
    run_id = run_view.get_attribute("id")

    run_view.locator(f'a[href="#ep-{run_id[4:]}-{j}"]').click()
    ep = page.locator(f"#ep-{run_id[4:]}-{j}")
    expect(ep).to_be_visible()
    steps = ep.locator("table.steps tr.step")
    expect(steps).to_have_count(len(record.trajectory["steps"]))
    step0 = steps.nth(0)
    expect(step0).to_contain_text(first["action"])
    # each id shown with the summary line it rendered as (MemCo: its field, e.g. "Failure
    # memory: ..."), so an id under "Failure memory" is not mistaken for a missing local one
    expect(step0.locator("code.memid")).to_have_text(first["memory_ids"])
    for mid in first["memory_ids"]:
        expect(step0.locator("li", has_text=mid)).to_contain_text(first["memory_entries"][mid])
    step0.locator("details.memory-text summary").click()
    expect(step0.locator("pre.memtext")).to_contain_text(MEMCO_HEADER)

    # the step's prompt, opened: the memory slot marked where the record says
    mark = ep.locator("tr.prompt").nth(0).locator("mark.memory")
    expect(mark.first).to_be_hidden()
    ep.locator("tr.prompt summary").nth(0).click()
    expect(mark.first).to_be_visible()
    expect(mark.first).to_have_text(first["memory"]["memco"])
    color = mark.first.evaluate("m => getComputedStyle(m).backgroundColor")
    assert color == "rgb(255, 243, 176)", color

    ep.get_by_role("link", name="viewer / pddl_generated / memco").click()
    expect(page.locator(f"#{run_id}")).to_be_visible()
    page.locator(".view.shown").get_by_role("link", name="runs").click()
    expect(page.locator("#runs")).to_be_visible()


def test_compare_shows_one_task_side_by_side_with_the_first_divergence(page, results):
    from playwright.sync_api import expect

    memco = [r for ph, r in read_episodes(_run_dir(results, "memco")) if ph == "evaluation"]
    noisy = [
        r
        for ph, r in read_episodes(_run_dir(results, "none", "scripted-expert-eps0.6"))
        if ph == "evaluation"
    ]
    tasks = sorted({r.task_id for r in memco} & {r.task_id for r in noisy})
    assert len(tasks) == 2

    def actions(records, task):
        return [
            [s["action"] for s in r.trajectory["steps"]]
            for r in sorted(records, key=lambda r: (str(r.agent), r.run))
            if r.task_id == task
        ]

    runs = page.locator("#runs")
    for name in ("memco/scripted-expert-eps0.1", "none/scripted-expert-eps0.6"):
        method, backbone = name.split("/")
        row = runs.locator("table.runs tbody tr", has_text=backbone).filter(has_text=method)
        row.locator("input.pick").check()
    runs.locator("#compare-selected").click()
    view = page.locator("#compare")
    expect(view).to_be_visible()
    expect(runs).to_be_hidden()
    task_rows = view.locator("#compare-tasks tbody tr")
    expect(task_rows).to_have_count(len(tasks))
    for k, task in enumerate(tasks):
        d = _divergence(actions(memco, task) + actions(noisy, task))
        expect(task_rows.nth(k)).to_contain_text(f"step {d}" if d >= 0 else "none")

    task = tasks[0]
    cols = actions(memco, task) + actions(noisy, task)
    d = _divergence(cols)
    assert d >= 0, cols  # the noisier expert leaves the path
    view.locator("a.task-link", has_text=task).click()
    grid = view.locator("#compare-grid")
    # MemCo is a team run (an agent per PDDL domain): its group starts with the views collapsed
    # into one column, a line per view; expanded, each trajectory is a column
    n_views = len(actions(memco, task))
    assert n_views > 1
    columns = grid.locator("table.compare-steps thead tr:not(.run-groups) th")
    expect(columns).to_have_count(2)
    expect(columns.nth(0).locator("li")).to_have_count(n_views)
    grid.locator("th.run-group button.views-toggle").click()
    expect(columns).to_have_count(len(cols))
    body = grid.locator("table.compare-steps tbody tr")
    expect(body).to_have_count(max(map(len, cols)))
    expect(grid.locator("tr.diverge")).to_have_count(1)
    expect(body.nth(d)).to_have_class("cstep diverge")
    expect(body.nth(d).locator(".badge")).to_have_text("first divergence")
    expect(grid.locator(".divergence-note")).to_contain_text(f"First divergence at step {d}")
    for c, col in enumerate(cols):
        cell = body.nth(0).locator("td").nth(c)
        expect(cell.locator("code.act")).to_have_text(col[0])
    # the memory each step showed, with each id's line (MemCo's columns come first)
    memco_cols = sorted(
        (r for r in memco if r.task_id == task), key=lambda r: (str(r.agent), r.run)
    )
    c, k = next(
        (c, k)
        for c, r in enumerate(memco_cols)
        for k, s in enumerate(r.trajectory["steps"])
        if s.get("memory_ids")
    )
    step = memco_cols[c].trajectory["steps"][k]
    cell = body.nth(k).locator("td").nth(c)
    expect(cell.locator("code.memid")).to_have_text(step["memory_ids"])
    expect(cell).to_contain_text(step["memory_entries"][step["memory_ids"][0]])
    # no-memory run: its cells say so
    expect(body.nth(0).locator("td").last).to_contain_text("no memory shown")

    # the same task for MemCo and no memory with the same expert: identical trajectories
    labels = page.locator("#compare .chooser label").all_text_contents()
    same = [i for i, t in enumerate(labels) if "eps0.1" in t and "/ icl /" not in t]
    assert len(same) == 2, labels
    page.goto(f"{page.url.split('#')[0]}#compare?runs={same[0]},{same[1]}&task={task}")
    expect(grid.locator(".divergence-note")).to_contain_text("identical")
    expect(grid.locator("tr.diverge")).to_have_count(0)
    view.locator("#only-diverging").check()
    expect(view.locator("#compare-tasks tbody tr").locator("visible=true")).to_have_count(0)

    # two one-view runs: their columns as they always were, one header row and no groups
    nones = [i for i, t in enumerate(labels) if "/ none /" in t]
    page.goto(f"{page.url.split('#')[0]}#compare?runs={nones[0]},{nones[1]}&task={task}")
    expect(grid.locator("thead tr")).to_have_count(1)
    expect(grid.locator("thead th")).to_have_count(1 + 2)
    expect(grid.locator("colgroup, .run-group, .group-start, .views")).to_have_count(0)
    expect(grid.locator("tbody tr").nth(0).locator("td").first.locator("pre.obs")).to_be_visible()


VIEWS = ("bathroom", "bedroom", "kitchen", "living_room")  # MemCo's ALFWorld scene agents
TEAM_TASKS = ("alfworld/bedroom/test/001", "alfworld/kitchen/test/000")
THINGS = ", ".join(
    f"a {thing} {i}"
    for i, thing in enumerate(
        "apple bread butterknife cup dishsponge egg fork knife lettuce mug pan plate pot".split()
    )
)


def _team_step(view: str, k: int, seed: int) -> dict:
    """Step ``k`` of the view's trajectory; seed 1 leaves seed 0's path at step 1."""
    place = f"drawer {k}" if (k, seed) == (1, 1) else f"countertop {k + 1}"
    mid = f"{view}-m{k}"
    return {
        "action": f"go to {place}",
        "observation": f"You arrive at {place}. On the {place}, you see {THINGS}.",
        "reward": 0.0,
        "progress": 0.0,
        "feedback": {"valid_action": True, "state_changed": True},
        "memory_ids": [mid],
        "memory_entries": {mid: f"In the {view}, look on the {place} first."},
    }


@pytest.fixture(scope="module")
def team_results(tmp_path_factory) -> Path:
    """Two MemCo runs written by hand (seeds 0 and 1), each of which evaluated both test tasks
    with each of its four scene-domain agent views: view v in 3 + v steps, kitchen solves."""
    root = tmp_path_factory.mktemp("team_results")
    for seed in (0, 1):
        records = [
            _record(
                task,
                [_team_step(view, k, seed) for k in range(3 + v)],
                agent=view,
                run=0,
                **(
                    {"success": True, "status": "success", "progress": 1.0}
                    if view == "kitchen"
                    else {"progress": 0.25}
                ),
            )
            for task in TEAM_TASKS
            for v, view in enumerate(VIEWS)
        ]
        run = root / "team" / "alfworld" / "memco" / "scripted-expert-eps0.1" / f"seed{seed}"
        _write_run(run, records, {"success_rate": 0.25})
    return root


def test_team_runs_name_their_views_in_the_comparison_data(team_results, tmp_path):
    """Each run's agent views (a team run has two or more; the comparison groups its columns
    by them), and each evaluated episode's run, view and progress; a one-view run has none."""
    data = _compare_data(render_page(team_results))
    assert [r["views"] for r in data["runs"]] == [list(VIEWS), list(VIEWS)]
    assert sorted((e["r"], e["task"], e["agent"]) for e in data["episodes"]) == [
        (r, t, v) for r in (0, 1) for t in TEAM_TASKS for v in VIEWS
    ]
    assert {(e["agent"], e["progress"]) for e in data["episodes"]} == {
        (v, 1.0 if v == "kitchen" else 0.25) for v in VIEWS
    }
    _hand_run(tmp_path, _team_step("kitchen", 0, 0))
    assert [r["views"] for r in _compare_data(render_page(tmp_path))["runs"]] == [[]]


@pytest.fixture
def team_page(browser, team_results, tmp_path):
    path = tmp_path / "runs.html"
    path.write_text(render_page(team_results), encoding="utf-8")
    with _opened(browser, path) as page:
        yield page


def _overflow(page) -> float:
    """How far the comparison's steps table reaches past the window's right edge (px)."""
    return page.evaluate(
        "document.querySelector('table.compare-steps').getBoundingClientRect().right"
        " - document.documentElement.clientWidth"
    )


def test_two_team_runs_fit_1400px_with_views_collapsed_and_expand_per_run(team_page):
    """Two MemCo runs (4 agent views each): one column group per run, its views collapsed into
    one column by default, so both fit a 1400 px window; expanded, 8 columns do not fit."""
    from playwright.sync_api import expect

    page = team_page
    page.goto(f"{page.url}#compare?runs=0,1&task={TEAM_TASKS[1]}")
    grid = page.locator("#compare-grid")
    groups = grid.locator("thead tr.run-groups th.run-group")
    expect(groups).to_have_count(2)
    for seed in (0, 1):
        expect(groups.nth(seed).locator("a.run-link")).to_have_text(re.compile(f"seed{seed}$"))
        expect(groups.nth(seed).locator("button.views-toggle")).to_have_text("expand 4 views")
    # collapsed: one column a run, each view's outcome in its header and action in each step
    columns = grid.locator("thead tr:not(.run-groups) th")
    expect(columns).to_have_count(2)
    expect(grid.locator("th.views.group-start")).to_have_count(2)
    views = columns.nth(0).locator("li")
    expect(views).to_have_text(
        [f"{v} failure, progress 0.25, {3 + i} steps" for i, v in enumerate(VIEWS[:2])]
        + ["kitchen success, progress 1.00, 5 steps", "living_room failure, progress 0.25, 6 steps"]
    )
    steps = grid.locator("tbody tr")
    expect(steps).to_have_count(6)
    expect(steps.nth(1)).to_have_class("cstep diverge")  # seed 1 went to the drawer
    expect(steps.nth(1).locator("td.views").nth(1).locator(".vstep")).to_have_text(
        [f"{v}go to drawer 1" for v in VIEWS]
    )
    expect(steps.nth(3).locator("td.views").nth(0).locator(".vstep").nth(0)).to_have_text(
        "bathroom (ended)"
    )
    assert _overflow(page) <= 0, _overflow(page)

    # expanded: each view a full column of its run's group
    for seed in (0, 1):
        groups.nth(seed).locator("button.views-toggle").click()
    expect(columns).to_have_count(8)
    expect(groups.nth(1)).to_have_attribute("colspan", "4")
    expect(groups.nth(1).locator("button.views-toggle")).to_have_text("collapse views")
    expect(columns.nth(6)).to_contain_text("agent kitchen")
    assert _overflow(page) > 0  # eight columns do not fit: what the collapsed default is for

    # one view in full, and collapsed again
    groups.nth(1).locator("select.view-pick").select_option(label="kitchen")
    expect(columns).to_have_count(5)
    expect(groups.nth(1)).to_have_attribute("colspan", "1")
    expect(steps.nth(0).locator("td").last.locator("code.memid")).to_have_text(["kitchen-m0"])
    groups.nth(0).locator("button.views-toggle").click()
    expect(columns).to_have_count(2)
    expect(columns.nth(0)).to_have_class("views group-start")
