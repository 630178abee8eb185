"""What each job of a sweep leaves in its sweep folder: ``jobs/<num>.json`` (its row of the
summary, memarena.cli) or ``failed_jobs/<num>.json`` (its overrides and error). The summary, the
Ray launcher and the rerun of unfinished jobs (memarena.launch.rerun) read and write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FAILED_JOBS = "failed_jobs"
JOBS = "jobs"


def write_job(sweep_dir: Path, num: Any, line: dict[str, Any]) -> None:
    folder = sweep_dir / JOBS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{num}.json").write_text(json.dumps({"job": num, **line}, indent=2) + "\n")


def write_failure(sweep_dir: Path, num: Any, overrides: list[str], message: str) -> None:
    folder = sweep_dir / FAILED_JOBS
    folder.mkdir(parents=True, exist_ok=True)
    body = {"job": num, "overrides": overrides, "error": message}
    (folder / f"{num}.json").write_text(json.dumps(body, indent=2) + "\n")
