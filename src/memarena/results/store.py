"""One run directory on disk: append-only JSONL records that survive a SIGKILL.

Layout: ``<results_dir>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/`` with
``config.yaml``, ``metrics.json``, ``episodes.jsonl``, ``acquisition.jsonl``, ``memory/`` and
``usage.json``. Records are appended and fsynced one line at a time, so a killed run loses at
most the line being written; :meth:`RunStore.read` drops such a torn last line.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.results.records import EpisodeRecord

log = logging.getLogger(__name__)

EPISODES = "episodes.jsonl"
ACQUISITION = "acquisition.jsonl"
REFLECTIONS = "reflections.jsonl"
METRICS = "metrics.json"
USAGE = "usage.json"
CONFIG = "config.yaml"
MEMORY_DIR = "memory"
FINAL_MEMORY_DIR = "memory_final"  # a learning evaluation's memory at the end of each run
SNAPSHOT_DONE = "SNAPSHOT_COMPLETE"
UPDATES = "updates.json"  # {"update_every": n}: the memory-update schedule the records follow


def run_dir_for(
    results_dir: str | Path,
    experiment: str,
    env: str,
    method: str,
    ablation: str | None,
    backbone: str,
    seed: int,
) -> Path:
    method_part = f"{method}+{ablation}" if ablation else method
    return Path(results_dir) / experiment / env / method_part / backbone / f"seed{seed}"


class RunStore:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def memory_dir(self) -> Path:
        return self.dir / MEMORY_DIR

    def final_memory_dir(self, run: int, view: str | None = None) -> Path:
        """Where the memory of evaluation run ``run`` (of ``view``) is saved when it ends, for
        an evaluation that learns: ``memory_final/[<view>/]run<k>/``."""
        base = self.dir / FINAL_MEMORY_DIR
        return (base / str(view) if view is not None else base) / f"run{run}"

    def clear(self) -> None:
        """Forget earlier records (``protocol.resume=false``)."""
        for name in (EPISODES, ACQUISITION, REFLECTIONS, METRICS, USAGE, UPDATES):
            (self.dir / name).unlink(missing_ok=True)
        shutil.rmtree(self.memory_dir, ignore_errors=True)
        shutil.rmtree(self.dir / FINAL_MEMORY_DIR, ignore_errors=True)

    # --- JSONL --------------------------------------------------------------------------
    def append(self, name: str, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open(self.dir / name, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def append_record(self, name: str, record: EpisodeRecord) -> None:
        self.append(name, record.to_json())

    def read_records(self, name: str) -> list[EpisodeRecord]:
        """The episode records of ``episodes.jsonl``, ``acquisition.jsonl`` or
        ``reflections.jsonl`` (a torn last line dropped, see :meth:`read`)."""
        return [EpisodeRecord.from_json(r) for r in self.read(name)]

    def read(self, name: str) -> list[dict[str, Any]]:
        path = self.dir / name
        if not path.exists():
            return []
        raw = path.read_bytes()
        records: list[dict[str, Any]] = []
        good = 0
        for line in raw.splitlines(keepends=True):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("unterminated line")
                records.append(json.loads(line))
            except ValueError:
                log.warning("dropping a torn record at the end of %s (killed run)", path)
                break
            good += len(line)
        if good != len(raw):
            with open(path, "r+b") as fh:
                fh.truncate(good)
        return records

    # --- whole files --------------------------------------------------------------------
    def write_json(self, name: str, obj: Any) -> None:
        self.write_text(name, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")

    def write_text(self, name: str, text: str) -> None:
        tmp = self.dir / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(self.dir / name)

    def read_json(self, name: str) -> Any:
        return json.loads((self.dir / name).read_text(encoding="utf-8"))

    def check_update_every(self, update_every: int) -> None:
        """Record ``protocol.update_every``; a resume whose records follow another schedule is
        refused (the memory updates could not be replayed as they happened)."""
        path = self.dir / UPDATES
        if path.exists():
            recorded = int(self.read_json(UPDATES)["update_every"])
            has_records = any((self.dir / n).exists() for n in (EPISODES, ACQUISITION))
            if recorded != update_every and has_records:
                raise ConfigError(
                    f"memarena: {self.dir} holds records made with protocol.update_every="
                    f"{recorded} (tasks per memory update); resuming with {update_every} would "
                    f"mix two update schedules. Rerun with protocol.update_every={recorded}, or "
                    "start over with protocol.resume=false."
                )
        self.write_json(UPDATES, {"update_every": int(update_every)})

    # --- memory snapshot ----------------------------------------------------------------
    def snapshot_complete(self) -> bool:
        return (self.memory_dir / SNAPSHOT_DONE).exists()

    def mark_snapshot_complete(self, info: dict[str, Any], folder: Path | None = None) -> None:
        folder = folder or self.memory_dir
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SNAPSHOT_DONE).write_text(json.dumps(info) + "\n")
