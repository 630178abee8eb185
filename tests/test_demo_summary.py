"""``python run.py`` (the demo) ends with a summary read from the run's files: per agent view
episodes, success, progress and memory shown, what the memory holds, the commands to open the
viewer on this run and to draw its figures, and (embedded model) that it is not there to score."""

from __future__ import annotations

import json
import shlex

from conftest import ROOT, run_py, run_script
from memarena.pipeline.demo_summary import summary_text


def test_the_demo_ends_with_its_summary_and_the_commands_to_look_at_it(tmp_path):
    # the demo experiment (the default) with the scripted expert, two test tasks
    args = ["backbone=scripted", "logger=none", "protocol.max_train_tasks=4",
            "protocol.max_eval_tasks=2", f"paths.results_dir={tmp_path}"]  # fmt: skip
    proc = run_py(args, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [p.parent for p in tmp_path.rglob("metrics.json")]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    text = summary_text(run_dir)
    assert text in proc.stdout  # printed as the run's last words
    lines = text.splitlines()
    assert lines[0].startswith("memarena: memco on alfworld_suite with scripted-expert")
    for agent, row in metrics["per_agent"].items():  # one row per agent view, its numbers
        (line,) = [x for x in lines if x.split()[:1] == [agent]]
        cells = line.split()
        assert int(cells[1]) == row["n_episodes"]
        assert float(cells[2]) == round(row["success_rate"], 3)
        assert float(cells[3]) == round(row["progress_rate"], 3)
        assert float(cells[4]) > 0  # MemCo showed memory at its steps
    assert f"memory written: {metrics['memory_size']} entries" in text
    assert f"global records promoted: {metrics['global_records']}" in text
    assert "embedded model" not in text  # the expert is no embedded model
    # the viewer command, as printed, writes the page of this run
    (view,) = [x for x in lines if "scripts/view_runs.py" in x]
    argv = shlex.split(view.split("#")[0])[2:]
    shown = run_script(ROOT / "scripts" / "view_runs.py", argv, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert (run_dir / "runs.html").is_file()
    assert f"--results-dir {tmp_path}" in text  # the figures command on its results folder
    assert "not to score" in summary_text(run_dir, embedded=True)  # the SmolLM2 demo's line


def test_a_method_that_learns_nothing_says_so_instead_of_question_marks(tmp_path):
    """The icl demo printed "memory written: ? entries from ? training tasks" (issue 51, 6)."""
    run = tmp_path / "demo" / "pddl_generated" / "icl" / "scripted" / "seed0"
    run.mkdir(parents=True)
    base = {"method": "icl", "env": "pddl_generated", "backbone": "scripted", "seed": 0,
            "success_rate": 1.0, "progress_rate": 1.0, "n_episodes": 4}  # fmt: skip
    (run / "metrics.json").write_text(json.dumps(base))
    text = summary_text(run)
    assert "?" not in text
    assert "memory written: none (icl learns nothing from training tasks)" in text
    (run / "metrics.json").write_text(json.dumps({**base, "memory_size": 7,
                                                  "acquisition_tasks": 8}))  # fmt: skip
    assert "memory written: 7 entries from 8 training tasks" in summary_text(run)
