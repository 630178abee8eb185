"""The trajectory viewer (scripts/view_runs.py, memarena.results.viewer): the memory spans it
marks, its escaping, and the page over a results tree the real pipeline wrote, opened in the
system's headless Chromium and navigated as a reader would (runs -> run -> episode -> prompt).

The browser is the Debian package ``chromium`` driven by Playwright (the ``dev`` extra);
``scripts/setup.sh --test`` installs both. Without them the browser test fails with the hint,
it never skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOT, run_py, run_script
from memarena.memory.memco.compose import HEADER as MEMCO_HEADER
from memarena.memory.reme.prompts import HEADER as REME_HEADER
from memarena.results.viewer import highlight, memory_spans, read_episodes, render_page

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = (
    "the viewer's browser test needs the system Chromium and Playwright: run "
    "`bash scripts/setup.sh --test` (as root it runs `apt-get install -y "
    "--no-install-recommends chromium`; otherwise install the Debian package `chromium` "
    "yourself) and `pip install -e '.[dev]'` for playwright"
)


def test_memory_spans_run_from_the_header_to_the_task_or_the_valid_actions():
    memory = f"{MEMCO_HEADER}\nNext priority: pickup b1\n\nmore memory"
    first = f"Example 1\n\n{memory}\n\nYour task: stack b1\n\nInitial observation: x"
    start = first.index(MEMCO_HEADER)
    # the span ends where "\n\nYour task: " starts (the slots precede the task)
    assert memory_spans(first) == [(start, start + len(memory))]
    step = f"Now true: b1 is clear.\n\n{REME_HEADER}\n1. do x\n\nValid actions: a; b"
    start = step.index(REME_HEADER)
    assert memory_spans(step) == [(start, step.index("\n\nValid actions: "))]
    # a header in the middle of a paragraph is not a slot; no header, no span
    assert memory_spans(f"he said {MEMCO_HEADER}") == []
    assert memory_spans("Your task: x") == []


def test_highlight_escapes_every_text():
    text = f"<b>obs</b> & more\n\n{MEMCO_HEADER}\n<script>alert(1)</script>"
    out = highlight(text)
    assert "<script>" not in out and "<b>" not in out
    assert out.startswith('&lt;b&gt;obs&lt;/b&gt; &amp; more\n\n<mark class="memory">')
    assert out.endswith("&lt;script&gt;alert(1)&lt;/script&gt;</mark>")


def test_page_of_a_hand_written_run_escapes_and_says_prompts_are_missing(tmp_path):
    run = tmp_path / "exp" / "pddl" / "none" / "scripted-expert-eps0.1" / "seed0"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(json.dumps({"success_rate": 0.0, "flags": ["capped"]}))
    step = {
        "action": "<img src=x onerror=alert(1)>",
        "observation": "a </pre> b",
        "reward": 0.0,
        "progress": 0.5,
        "feedback": {"valid_action": False, "state_changed": False, "failure_label": "parse"},
    }
    record = {
        "task_id": "t<1>",
        "success": False,
        "progress": 0.5,
        "steps": 1,
        "status": "failure",
        "trajectory": {
            "task": {"id": "t<1>", "env": "pddl", "split": "test", "domain": "d", "goal": "g"},
            "initial_observation": "start",
            "steps": [step],
        },
    }
    (run / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    page = render_page(tmp_path)
    assert "<img" not in page and "a </pre> b" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "t&lt;1&gt;" in page
    assert "protocol.record_prompts=true" in page and "(parse)" in page
    assert 'href="#ep-0-0"' in page


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two runs the real pipeline wrote with their prompts: MemCo (step memory) and ICL."""
    root = tmp_path_factory.mktemp("viewer_results")
    proc = run_py(
        [
            "-m",
            "method=memco,icl",
            "env=pddl",
            "backbone=scripted",
            "protocol.max_train_tasks=3",
            "protocol.max_eval_tasks=2",
            "protocol.record_prompts=true",
            "experiment_name=viewer",
            "logger=none",
            f"paths.results_dir={root}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def _browser(playwright):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found; {INSTALL_HINT}")
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])


def test_view_runs_page_renders_and_navigates_in_headless_chromium(results, tmp_path):
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        pytest.fail(f"playwright is not installed; {INSTALL_HINT}")
    out = tmp_path / "page" / "runs.html"
    proc = run_script(ROOT / "scripts" / "view_runs.py", [results, "--out", out], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (memco_dir,) = [p.parent for p in results.rglob("memco/*/seed0/metrics.json")]
    episodes = read_episodes(memco_dir)
    # an evaluated episode whose first step was shown memory in its first message
    j, record = next(
        (j, r)
        for j, (ph, r) in enumerate(episodes)
        if ph == "evaluation" and r.trajectory["steps"][0].get("memory_ids")
    )
    first_ids = record.trajectory["steps"][0]["memory_ids"]

    requests: list[str] = []
    with sync_playwright() as p:
        browser = _browser(p)
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())

        # the runs list: both runs with their ids, metrics and flags
        runs = page.locator("#runs")
        expect(runs).to_be_visible()
        expect(runs.locator("tbody tr")).to_have_count(2)
        expect(runs).to_contain_text("pddl_generated")
        expect(runs).to_contain_text("scripted-expert-eps0.1")
        expect(runs).to_contain_text("success_rate")
        expect(runs).to_contain_text("capped")

        # into the MemCo run: its episodes, the runs list hidden
        runs.locator("a.run-link", has_text="memco").click()
        run_view = page.locator(".view.shown")
        expect(runs).to_be_hidden()
        expect(run_view.locator("h2")).to_contain_text("viewer / pddl_generated / memco")
        expect(run_view.locator("table.episodes tbody tr")).to_have_count(len(episodes))
        run_id = run_view.get_attribute("id")

        # into the episode: its steps and the memory ids retrieved
        run_view.locator(f'a[href="#ep-{run_id[4:]}-{j}"]').click()
        ep = page.locator(f"#ep-{run_id[4:]}-{j}")
        expect(ep).to_be_visible()
        expect(page.locator(f"#{run_id}")).to_be_hidden()
        ids = ep.locator(".episode-memory-ids code.memid")
        expect(ids).to_have_text(record.memory_ids)
        steps = ep.locator("table.steps tr.step")
        expect(steps).to_have_count(len(record.trajectory["steps"]))
        first = steps.nth(0)
        expect(first).to_contain_text(record.trajectory["steps"][0]["action"])
        expect(first).to_contain_text("valid")
        expect(first.locator("code.memid")).to_have_text(first_ids)

        # the step's prompt, opened: the memory section highlighted
        mark = ep.locator("tr.prompt").nth(0).locator("mark.memory")
        expect(mark.first).to_be_hidden()
        ep.locator("tr.prompt summary").nth(0).click()
        expect(mark.first).to_be_visible()
        expect(mark.first).to_contain_text(MEMCO_HEADER)
        color = mark.first.evaluate("m => getComputedStyle(m).backgroundColor")
        assert color == "rgb(255, 243, 176)", color

        # back to the run, and to the runs list
        ep.get_by_role("link", name="viewer / pddl_generated / memco").click()
        expect(page.locator(f"#{run_id}")).to_be_visible()
        page.locator(".view.shown").get_by_role("link", name="runs").click()
        expect(runs).to_be_visible()
        browser.close()
    # self-contained: the page fetched nothing but itself
    assert requests and all(u.startswith("file://") for u in requests), requests
