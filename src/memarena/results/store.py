"""One run directory on disk: append-only JSONL records that survive a SIGKILL, and the checks
that keep a folder either right or refusing.

Layout: ``<results_dir>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/`` with
``config.yaml``, ``identity.json``, ``run_info.json`` (per invocation: git commit and dirty
flag, package versions, host, start, end, wall time, status and outcome), ``metrics.json``,
``episodes.jsonl``, ``acquisition.jsonl``, ``memory/`` and ``usage.json``.

- Records are appended and fsynced one line at a time, so a killed run loses at most the line
  being written: :meth:`RunStore.read` drops such a torn last line. A corrupt line anywhere else
  is reported with its line number and nothing is deleted.
- :meth:`RunStore.lock` holds an advisory file lock for the whole run: a second run of the same
  cell (a Slurm requeue beside a manual rerun) fails at once naming the holder. The kernel
  releases the lock when its process dies, so a dead run's lock is simply taken over.
- :meth:`RunStore.check_identity` keeps the config that produced the records: a resume whose
  result-changing keys differ is refused with the differing keys; ``config.yaml`` is written only
  with the identity, never rewritten to a config that did not produce the records. An
  evaluation from another run's snapshot has that snapshot's sha256 in its identity
  (:data:`SNAPSHOT_PIN`): a resume after that run was redone is refused naming the snapshot.
- :meth:`RunStore.begin_invocation` keeps the code that produced the records: a resume at
  another git commit, or with other uncommitted changes to ``src/`` / ``conf/`` (when
  ``run_info.json`` has their hash; an older one: the commit only), is refused with both
  versions unless ``protocol.allow_code_change=true`` (recorded). A run outside a git checkout
  records no commit and is never refused.
- A snapshot's completion marker holds the sha256 of ``memory.json`` (and the env it was
  acquired on); :func:`verify_snapshot` refuses a corrupt or partial one with the file and the
  fix.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memarena.core import jsonl
from memarena.core.cache_build import holding, try_flock
from memarena.core.errors import ConfigError
from memarena.core.memory import SNAPSHOT_FILE
from memarena.results.records import EpisodeRecord

log = logging.getLogger(__name__)

EPISODES = "episodes.jsonl"
ACQUISITION = "acquisition.jsonl"
REFLECTIONS = "reflections.jsonl"
METRICS = "metrics.json"
USAGE = "usage.json"
CONFIG = "config.yaml"
IDENTITY = "identity.json"  # the result-changing config keys the records were made with
RUN_INFO = "run_info.json"  # code version, packages, host, times
LOCK = ".lock"
MEMORY_DIR = "memory"
FINAL_MEMORY_DIR = "memory_final"  # a learning evaluation's memory at the end of each run
SNAPSHOT_DONE = "SNAPSHOT_COMPLETE"
RECORD_FILES = (EPISODES, ACQUISITION, REFLECTIONS)
# the identity key holding the sha256 of the snapshot an evaluation starts from
# (protocol.snapshot_from). An identity recorded before it existed gains it on the next resume.
SNAPSHOT_PIN = "snapshot_from.sha256"
# a snapshot's readers' lock file: every run evaluating it holds a shared flock on it for its
# whole invocation, and a rewrite of the snapshot (its run redone) is refused while one does
SNAPSHOT_IN_USE = ".in_use"


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
        # called with (file name, record) after each episode record is written (live metrics)
        self.listeners: list[Callable[[str, EpisodeRecord], None]] = []
        self.invocation_open = False  # this process's run_info.json entry, until closed
        self.metrics_stale = False  # a record was added since metrics.json was written

    @property
    def memory_dir(self) -> Path:
        return self.dir / MEMORY_DIR

    def final_memory_dir(self, run: int, view: str | None = None) -> Path:
        """Where the memory of evaluation run ``run`` (of ``view``) is saved when it ends, for
        an evaluation that learns: ``memory_final/[<view>/]run<k>/``."""
        base = self.dir / FINAL_MEMORY_DIR
        return (base / str(view) if view is not None else base) / f"run{run}"

    def clear(self) -> None:
        """Forget earlier records (``protocol.resume=false``); refused while another run
        evaluates this run's snapshot."""
        with snapshot_rewrite(self.memory_dir):
            pass
        for name in (*RECORD_FILES, METRICS, USAGE, IDENTITY):
            (self.dir / name).unlink(missing_ok=True)
        shutil.rmtree(self.memory_dir, ignore_errors=True)
        shutil.rmtree(self.dir / FINAL_MEMORY_DIR, ignore_errors=True)

    def is_empty(self) -> bool:
        """Nothing in the run directory but (perhaps) its lock file."""
        return all(p.name == LOCK for p in self.dir.iterdir())

    def remove(self, root: str | Path) -> None:
        """Delete the run directory, then each parent left empty, up to ``root`` (the results
        folder) exclusive."""
        shutil.rmtree(self.dir, ignore_errors=True)
        top = Path(root).resolve()
        for parent in self.dir.resolve().parents:
            if parent == top or top not in parent.parents:
                break
            try:
                parent.rmdir()  # only when empty
            except OSError:
                break

    def has_records(self) -> bool:
        return any((self.dir / n).exists() for n in RECORD_FILES) or self.memory_dir.exists()

    # --- the run lock -------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for this process, or fail naming the holder."""
        path = self.dir / LOCK
        fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the whole run

        def refuse(holder: str) -> None:
            raise ConfigError(
                f"memarena: {self.dir} is in use by {holder}: two runs of one cell would "
                "write the same records twice. Wait for that run to finish, or give this "
                "run another paths.results_dir."
            )

        with holding(fh, refuse):
            yield

    # --- config identity -----------------------------------------------------------------
    def check_identity(
        self, identity: Mapping[str, Any], config_yaml: str, snapshot: Path | None = None
    ) -> None:
        """Refuse a resume whose result-changing keys differ from the records'; record the
        identity and ``config.yaml`` when there are no records yet (or they match).
        ``snapshot``: the folder ``protocol.snapshot_from`` resolved to, for the message when
        its content changed (:data:`SNAPSHOT_PIN`)."""
        path = self.dir / IDENTITY
        if path.exists() and self.has_records():
            recorded = self.read_json(IDENTITY)
            if SNAPSHOT_PIN in identity and SNAPSHOT_PIN not in recorded:
                # recorded before snapshots were pinned: pin the one these records go on with
                log.warning(
                    "%s records no checksum of its snapshot (an older run); pinning %s now",
                    self.dir, snapshot,
                )  # fmt: skip
                recorded = {**recorded, SNAPSHOT_PIN: identity[SNAPSHOT_PIN]}
                if not _differences(recorded, identity):
                    self.write_json(IDENTITY, recorded)
            old_pin, new_pin = recorded.get(SNAPSHOT_PIN), identity.get(SNAPSHOT_PIN)
            if old_pin and new_pin and old_pin != new_pin:
                raise ConfigError(
                    f"memarena: {self.dir} holds records evaluated on the memory snapshot "
                    f"protocol.snapshot_from={identity.get('protocol.snapshot_from')}"
                    f"{f' ({snapshot})' if snapshot else ''} as it was then (memory.json sha256 "
                    f"{old_pin[:12]}...), and that snapshot has changed since (now "
                    f"{new_pin[:12]}...): its run was redone. Resuming would evaluate the "
                    "remaining episodes against other memory. Evaluate the new snapshot in "
                    "another paths.results_dir (or experiment_name), start over here with "
                    "protocol.resume=false, or put back the snapshot these records were made with."
                )
            diff = _differences(recorded, identity)
            if diff:
                shown = "; ".join(diff[:8]) + (
                    f"; and {len(diff) - 8} more" if len(diff) > 8 else ""
                )
                raise ConfigError(
                    f"memarena: {self.dir} holds records made with another configuration "
                    f"({shown}). Resuming would mix the two. Use another paths.results_dir (or "
                    "experiment_name), or start over here with protocol.resume=false."
                )
            return
        if self.has_records() and not path.exists():
            log.warning(
                "%s has records but no %s (an older run); recording this config", self.dir, IDENTITY
            )
        self.write_json(IDENTITY, dict(identity))
        self.write_text(CONFIG, config_yaml)

    # --- run info ------------------------------------------------------------------------
    def begin_invocation(self, info: Mapping[str, Any], allow_code_change: bool = False) -> None:
        """Append this process (code, packages, host, start time) to ``run_info.json``.
        With records here, a resume on other code than the last invocation's (see
        :func:`code_change`) is refused unless ``allow_code_change``; allowed, the entry
        records ``code_changed_from``."""
        data = self._run_info()
        for dead in (i for i in data["invocations"] if i.get("finished") is None):
            # an entry never closed: its process died (it no longer holds the run's lock)
            dead.update(status="killed", outcome="ended without closing its entry (killed: "
                        "SIGKILL, out of memory, a lost node)",
                        found_killed=time.strftime("%Y-%m-%dT%H:%M:%S"))  # fmt: skip
        entry = {**info, "allow_code_change": bool(allow_code_change)}
        previous = next((i for i in reversed(data["invocations"]) if i.get("git_commit")), None)
        change = code_change(previous, info) if self.has_records() else None
        if change:
            if not allow_code_change:
                raise ConfigError(
                    f"memarena: {self.dir} holds records made by {change[0]}; this checkout is "
                    f"{change[1]}. Resuming would mix records of two code versions. Resume with "
                    "the code they were made with, use another paths.results_dir (or "
                    "experiment_name), start over here with protocol.resume=false, or set "
                    "protocol.allow_code_change=true to resume anyway (recorded in "
                    f"{RUN_INFO})."
                )
            log.warning("resuming %s on other code (%s; now %s)", self.dir, *change)
            entry["code_changed_from"] = {k: previous.get(k) for k in CODE_KEYS}
        data["invocations"].append({**entry, "finished": None, "wall_s": None})
        self.write_json(RUN_INFO, data)
        self.invocation_open = True

    def end_invocation(self, wall_s: float, outcome: str, status: str | None = None) -> None:
        """Close this process's entry in ``run_info.json`` with its wall time, ``status``
        (``finished``, ``terminated``, ``interrupted`` or ``error``) and outcome (the signal
        or error that ended it); ``wall_s`` totals every invocation. Does nothing unless this
        process began an invocation here and has not closed it (the last entry is then its
        own, never an earlier process's)."""
        if not self.invocation_open:
            return
        self.invocation_open = False
        data = self._run_info()
        if not data["invocations"]:
            return
        data["invocations"][-1].update(
            finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
            wall_s=round(wall_s, 2),
            status=status or ("finished" if outcome == "finished" else "error"),
            outcome=outcome,
        )
        data["wall_s"] = round(sum(i.get("wall_s") or 0 for i in data["invocations"]), 2)
        self.write_json(RUN_INFO, data)

    def invocations(self) -> list[dict[str, Any]]:
        """The processes ``run_info.json`` records for this run, oldest first."""
        return list(self._run_info()["invocations"])

    def _run_info(self) -> dict[str, Any]:
        try:
            data = self.read_json(RUN_INFO)
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict) or not isinstance(data.get("invocations"), list):
            data = {"invocations": []}
        return data

    # --- JSONL --------------------------------------------------------------------------
    def append(self, name: str, record: dict[str, Any]) -> None:
        if name in RECORD_FILES and not self.metrics_stale:
            # metrics.json no longer describes the records: gone until the run writes it
            # again, so a killed resume never leaves a table reporting fewer tasks than ran
            (self.dir / METRICS).unlink(missing_ok=True)
            self.metrics_stale = True
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open(self.dir / name, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def append_record(self, name: str, record: EpisodeRecord) -> None:
        self.append(name, record.to_json())
        for listener in self.listeners:
            listener(name, record)

    def read_records(self, name: str) -> list[EpisodeRecord]:
        """The episode records of ``episodes.jsonl``, ``acquisition.jsonl`` or
        ``reflections.jsonl`` (a torn last line dropped, see :meth:`read`)."""
        out = []
        for lineno, record in enumerate(self.read(name), 1):
            try:
                out.append(EpisodeRecord.from_json(record))
            except ValueError as err:
                raise ConfigError(
                    f"memarena: {self.dir / name} line {lineno} is not an episode record "
                    f"({err}); repair or remove that line, or start over with "
                    "protocol.resume=false."
                ) from None
        return out

    def read(self, name: str) -> list[dict[str, Any]]:
        """The JSON lines of ``name`` (each a JSON object). Only an unterminated last line is a
        torn write (a run killed while writing it): it is dropped and cut from the file. Any
        other bad line (not JSON, not an object), the newline-terminated last line included,
        stops the run with its line number, and nothing is deleted."""
        path = self.dir / name
        if not path.exists():
            return []
        raw = path.read_bytes()
        lines = jsonl.lines(raw, keepends=True)
        records: list[dict[str, Any]] = []
        good = 0
        for i, line in enumerate(lines):
            if not line.endswith(b"\n"):  # only the last line can lack its newline
                log.warning("dropping a torn record at the end of %s (killed run)", path)
                break
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError(f"a JSON {type(record).__name__}, not an object")
            except ValueError as err:
                raise ConfigError(
                    f"memarena: {path} line {i + 1} is corrupt ({err}); the line is complete "
                    "(newline-terminated), so it is not a record cut short by a killed run. "
                    "Nothing was deleted: repair or remove that line, or start over with "
                    "protocol.resume=false."
                ) from None
            records.append(record)
            good += len(line)
        if good != len(raw):
            with open(path, "r+b") as fh:
                fh.truncate(good)
        return records

    # --- whole files --------------------------------------------------------------------
    def write_json(self, name: str, obj: Any) -> None:
        self.write_text(name, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
        if name == METRICS:  # describes the records again, until the next one is added
            self.metrics_stale = False

    def write_text(self, name: str, text: str) -> None:
        """Write ``name`` whole or not at all: a temporary file renamed over it, removed when
        the write fails (a full disk)."""
        tmp = self.dir / (name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(self.dir / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def remove_temporary(self) -> list[Path]:
        """Remove the ``*.tmp`` files that failed writes left in the run directory (the
        memory snapshot's ``memory/memory.json.tmp`` included) and return them. Only the lock
        holder writes here, so none is another process's write in progress."""
        removed = []
        for path in sorted(self.dir.rglob("*.tmp")):
            if path.is_file():
                path.unlink(missing_ok=True)
                removed.append(path)
        return removed

    def read_json(self, name: str) -> Any:
        return json.loads((self.dir / name).read_text(encoding="utf-8"))

    # --- memory snapshot ----------------------------------------------------------------
    def snapshot_complete(self) -> bool:
        return (self.memory_dir / SNAPSHOT_DONE).exists()

    def mark_snapshot_complete(self, info: dict[str, Any], folder: Path | None = None) -> None:
        """Mark a written snapshot complete, with the sha256 of its ``memory.json``."""
        mark_complete(folder or self.memory_dir, info)


CODE_KEYS = ("git_commit", "git_dirty", "git_diff_sha256")


def code_change(
    previous: Mapping[str, Any] | None, now: Mapping[str, Any]
) -> tuple[str, str] | None:
    """``(the records' code, this code)`` described, when two invocations ran other code, else
    None. The same code: the same commit and, when both recorded it, the same sha256 of the
    uncommitted changes to ``src/`` and ``conf/`` (an older ``run_info.json`` without it: the
    commit only). Nothing is compared when either has no commit (not a git checkout)."""
    if not previous or not previous.get("git_commit") or not now.get("git_commit"):
        return None
    same = previous["git_commit"] == now["git_commit"]
    if "git_diff_sha256" in previous and "git_diff_sha256" in now:
        same = same and previous["git_diff_sha256"] == now["git_diff_sha256"]
    if same:
        return None
    return _code(previous), _code(now)


def _code(info: Mapping[str, Any]) -> str:
    diff = info.get("git_diff_sha256")
    changes = f" with uncommitted changes (diff sha256 {diff[:12]}...)" if diff else ""
    if not diff and "git_diff_sha256" not in info and info.get("git_dirty"):
        changes = " with uncommitted changes (not hashed)"
    return f"commit {info['git_commit']}{changes}"


def snapshot_sha256(folder: Path) -> str:
    """The sha256 of a complete snapshot's ``memory.json``: its marker's (checked by
    :func:`verify_snapshot`), computed for a marker without one."""
    recorded = snapshot_marker(folder).get("sha256")
    if isinstance(recorded, str) and recorded:
        return recorded
    return file_sha256(folder / SNAPSHOT_FILE)


def snapshot_marker(folder: Path) -> dict[str, Any]:
    """What a snapshot's completion marker holds (``{}`` when unreadable)."""
    try:
        data = json.loads((folder / SNAPSHOT_DONE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def verify_snapshot(folder: Path) -> None:
    """A complete snapshot whose ``memory.json`` is the one its marker describes, else a
    ConfigError naming the file and the fix."""
    marker, data = folder / SNAPSHOT_DONE, folder / SNAPSHOT_FILE
    fix = (
        f"Delete {folder} to rebuild it from acquisition.jsonl (no episode is rerun), or start "
        "over with protocol.resume=false."
    )
    if not data.is_file():
        raise ConfigError(
            f"memarena: the snapshot {folder} is marked complete but {data} is missing. {fix}"
        )
    try:
        expected = json.loads(marker.read_text()).get("sha256")
    except (OSError, ValueError) as err:
        raise ConfigError(f"memarena: {marker} is corrupt ({err}). {fix}") from None
    if expected is not None and expected != file_sha256(data):
        raise ConfigError(
            f"memarena: {data} does not match its checksum in {marker} (changed or corrupt "
            f"after it was written). {fix}"
        )


def mark_complete(folder: Path, info: dict[str, Any]) -> None:
    """Mark the snapshot written in ``folder`` complete, with ``info`` and the sha256 of its
    ``memory.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    body = {**info, "sha256": file_sha256(folder / SNAPSHOT_FILE)}
    (folder / SNAPSHOT_DONE).write_text(json.dumps(body) + "\n")


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()




def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [
        f"{k}: {old.get(k, '(unset)')!r} in the records, {new.get(k, '(unset)')!r} now"
        for k in keys
        if old.get(k) != new.get(k)
    ]


@contextlib.contextmanager
def snapshot_rewrite(folder: Path) -> Iterator[None]:
    """Hold ``folder`` (a snapshot) exclusively while it is rewritten or removed; refused,
    naming the fix, while a run evaluating it (:func:`pinned_copy`) holds it."""
    if not folder.is_dir():
        yield
        return
    fh = open(folder / SNAPSHOT_IN_USE, "a+", encoding="utf-8")  # noqa: SIM115
    try:
        if not try_flock(fh, fcntl.LOCK_EX):
            raise ConfigError(
                f"memarena: the memory snapshot {folder} is in use: a run evaluating it "
                "(protocol.snapshot_from) is running, and rewriting it now would change the "
                "memory under that evaluation. Wait for it to finish, or write this run into "
                "another paths.results_dir."
            )
        yield
    finally:
        fh.close()


@contextlib.contextmanager
def pinned_copy(folder: Path, sha256: str) -> Iterator[Path]:
    """A private copy of the snapshot ``folder`` whose ``memory.json`` has the ``sha256`` the
    run pinned, kept for the whole block (removed after it): every load of the run reads the
    copy, so a rebuild of the source cannot reach a running evaluation. The source is held
    shared for the block (:func:`snapshot_rewrite` refuses meanwhile); a source being rewritten,
    or changed since the pin, is refused."""
    fh = open(folder / SNAPSHOT_IN_USE, "a+", encoding="utf-8")  # noqa: SIM115
    copy = Path(tempfile.mkdtemp(prefix="memarena-snapshot-"))
    try:
        if not try_flock(fh, fcntl.LOCK_SH):
            raise ConfigError(
                f"memarena: the memory snapshot {folder} is being rewritten (its run is "
                "running). Wait for that run to finish, then start this one."
            )
        ignore = shutil.ignore_patterns(SNAPSHOT_IN_USE)
        shutil.copytree(folder, copy, dirs_exist_ok=True, ignore=ignore)
        check_pinned(copy, sha256, folder)
        yield copy
    finally:
        fh.close()
        shutil.rmtree(copy, ignore_errors=True)


def check_pinned(folder: Path, sha256: str, source: Path | None = None) -> None:
    """The snapshot in ``folder`` is the one the run pinned, else a ConfigError."""
    now = file_sha256(folder / SNAPSHOT_FILE)
    if now != sha256:
        raise ConfigError(
            f"memarena: the memory snapshot {source or folder} changed after this run pinned it "
            f"(sha256 {sha256[:12]}... in identity.json, {now[:12]}... now): its run was "
            "redone. Rerun this evaluation (protocol.resume=false), or point "
            "protocol.snapshot_from at the snapshot it pinned."
        )
