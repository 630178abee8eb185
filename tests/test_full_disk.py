"""A full disk ends a run with one message (the folder and the fix), not an OSError plus a
second one from closing ``run_info.json``: the logger is still finished, the models closed and
the temporary files of failed writes removed. A failure while building the env or the backbone
closes the invocation too. In-process through the pipeline (scripted parts), with a simulated
disk that fills up at a chosen write (issue 36 item 6)."""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
from pathlib import Path

import pytest

import memarena.pipeline as pipeline
from conftest import compose_cfg
from memarena.agent.policy import ExpertPolicy
from memarena.cli import run_job
from memarena.envs.pddl import PDDLEnv
from memarena.results import store
from memarena.results.loggers import NoLogger

ARGS = [
    "env=pddl",
    "method=memco",  # acquires with the expert as agent and writes memory/memory.json
    "backbone=scripted",
    "logger=none",
    "protocol.max_train_tasks=6",
    "protocol.max_eval_tasks=4",
    "protocol.concurrency=2",
]


class FillingDisk:
    """The disk under ``root``: unlimited until the write ``fills`` names (a file name, and
    for records its n-th line), which gets half its bytes on disk and fails with ENOSPC; from
    then on a write fails unless files removed since gave back room (the bytes the test's own
    writes put there). Writes outside ``root`` are not counted."""

    def __init__(self, root: Path, fills: str, nth: int = 1) -> None:
        self.root, self.fills, self.nth = str(root), fills, nth
        self.seen = 0
        self.room: int | None = None  # None: not full yet
        self.sizes: dict[str, int] = {}

    def _full(self, path: Path, size: int) -> bool:
        """Whether writing ``size`` bytes to ``path`` fails (and the disk is full from now)."""
        if self.room is None and path.name == self.fills:
            self.seen += 1
            if self.seen == self.nth:
                self.room = 0
                return True
        return self.room is not None and size > self.room

    def _take(self, path: Path, size: int) -> None:
        if self.room is not None:
            self.room -= size
        self.sizes[str(path)] = self.sizes.get(str(path), 0) + size

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        write_text, replace, unlink = Path.write_text, Path.replace, Path.unlink
        append = store.RunStore.append
        disk = self

        def no_space(path: Path) -> OSError:
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

        def fake_write_text(self, data, encoding=None, errors=None, newline=None):
            if not str(self).startswith(disk.root):
                return write_text(self, data, encoding, errors, newline)
            size = len(data.encode("utf-8"))
            if disk._full(self, size):
                part = data.encode("utf-8")[: size // 2].decode("utf-8", "ignore")
                write_text(self, part, encoding, errors, newline)  # what fitted
                disk.sizes[str(self)] = len(part.encode("utf-8"))
                raise no_space(self)
            disk.sizes.pop(str(self), None)
            disk._take(self, size)
            return write_text(self, data, encoding, errors, newline)

        def fake_replace(self, target):
            moved = disk.sizes.pop(str(self), 0)
            if disk.room is not None:
                disk.room += disk.sizes.pop(str(target), 0)
            disk.sizes[str(target)] = moved
            return replace(self, target)

        def fake_unlink(self, missing_ok=False):
            freed = disk.sizes.pop(str(self), 0)
            if disk.room is not None:
                disk.room += freed
            return unlink(self, missing_ok=missing_ok)

        def fake_append(self, name, record):
            path = self.dir / name
            size = len(json.dumps(record, ensure_ascii=False)) + 1
            if disk._full(path, size):
                raise no_space(path)
            disk._take(path, size)
            append(self, name, record)

        monkeypatch.setattr(Path, "write_text", fake_write_text)
        monkeypatch.setattr(Path, "replace", fake_replace)
        monkeypatch.setattr(Path, "unlink", fake_unlink)
        monkeypatch.setattr(store.RunStore, "append", fake_append)


@pytest.fixture
def spies(monkeypatch):
    """What the run's clean-up did: the logger's finish codes and the close_parts calls."""
    seen: dict[str, list] = {"finish": [], "closed": []}
    close_parts = pipeline.close_parts

    def finish(self, exit_code: int = 0) -> None:
        seen["finish"].append(exit_code)

    def closing(parts, *others):
        seen["closed"].append(parts)
        close_parts(parts, *others)

    monkeypatch.setattr(NoLogger, "finish", finish)
    monkeypatch.setattr(pipeline, "close_parts", closing)
    return seen


def _cfg(tmp_path: Path, *extra: str):
    return compose_cfg([*ARGS, f"paths.results_dir={tmp_path / 'results'}", *extra])


def _invocations(tmp_path: Path) -> list[dict]:
    (info,) = (tmp_path / "results").rglob("run_info.json")
    return json.loads(info.read_text())["invocations"]


def _errors(caplog) -> list[str]:
    """The run's error messages; a clean-up step that failed would add a warning."""
    assert not [r for r in caplog.records if "failed" in r.getMessage() and r.levelno >= 30]
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("fills", "nth"),
    [("episodes.jsonl", 3), ("memory.json.tmp", 1)],
    ids=["records", "snapshot"],
)
def test_a_full_disk_ends_the_run_with_one_message_and_closes_it(
    tmp_path, monkeypatch, caplog, spies, fills, nth
):
    cfg = _cfg(tmp_path)
    FillingDisk(tmp_path, fills, nth).install(monkeypatch)
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as ended:
        run_job(cfg)
    assert ended.value.code == 2
    (message,) = _errors(caplog)  # one message: no second exception
    (run_dir,) = {p.parent for p in (tmp_path / "results").rglob("identity.json")}
    folder = run_dir / "memory" if fills.startswith("memory") else run_dir
    assert message.startswith("memarena: no space left on the disk holding ")
    assert f"the disk holding {folder} (writing {folder / fills})" in message
    assert "Free space there" in message and "paths.results_dir" in message
    assert "rerun the same command" in message
    assert spies["finish"] == [1]  # the logger finished, as failed
    assert len(spies["closed"]) == 1  # the models closed
    assert not list(tmp_path.rglob("*.tmp"))  # memory.json.tmp, run_info.json.tmp removed
    records = (run_dir / "acquisition.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in records)  # whole lines only
    assert not (run_dir / "metrics.json").exists()
    last = _invocations(tmp_path)[-1]
    if fills == "memory.json.tmp":
        # the half-written snapshot was removed first: that room let run_info.json be closed
        assert last["finished"] is not None and last["status"] == "error"
        assert "No space left on device" in last["outcome"]
    else:  # nothing freed: run_info.json keeps the invocation open (the disk is full)
        assert last["finished"] is None
    assert _lock_is_free(run_dir)


def _lock_is_free(run_dir: Path) -> bool:
    """Whether this process can take the run's lock now (the run released it)."""
    try:
        with store.RunStore(run_dir).lock():
            return True
    except Exception:
        return False


def _earlier_run(tmp_path: Path) -> Path:
    """A finished run of the cell on fewer test tasks: the failing builds below extend it (a
    resume), so its folder holds records and stays."""
    pipeline.run(_cfg(tmp_path, "protocol.max_eval_tasks=2"))
    (info,) = (tmp_path / "results").rglob("run_info.json")
    return info.parent


@pytest.mark.parametrize("earlier", [True, False], ids=["resume", "fresh"])
def test_a_full_disk_while_building_the_backbone_closes_the_env_and_the_invocation(
    tmp_path, monkeypatch, caplog, spies, earlier
):
    run_dir = _earlier_run(tmp_path) if earlier else None
    finished = list(spies["finish"])  # the earlier run's logger
    closed = []

    @functools.wraps(ExpertPolicy.__init__)  # the same parameters for the config check
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "models" / "w.bin"))

    monkeypatch.setattr(ExpertPolicy, "__init__", full)
    monkeypatch.setattr(PDDLEnv, "close", lambda self: closed.append(self))
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as ended:
        run_job(_cfg(tmp_path))
    assert ended.value.code == 2
    (message,) = _errors(caplog)
    assert f"no space left on the disk holding {tmp_path / 'models'}" in message
    assert len(closed) == 1 and spies["finish"] == finished  # the env closed; no logger started
    if run_dir is None:  # nothing was recorded: no run folder is left behind
        assert not list((tmp_path / "results").rglob("seed0"))
        return
    last = _invocations(tmp_path)[-1]
    assert last["finished"] is not None and last["status"] == "error"
    assert last["outcome"].startswith("OSError: [Errno 28]")
    assert _lock_is_free(run_dir)


@pytest.mark.parametrize("earlier", [True, False], ids=["resume", "fresh"])
def test_a_failing_env_constructor_closes_the_invocation(tmp_path, monkeypatch, earlier):
    run_dir = _earlier_run(tmp_path) if earlier else None

    @functools.wraps(PDDLEnv.__init__)  # the same parameters for the config check
    def broken(self, *args, **kwargs):
        raise RuntimeError("the env could not start")

    monkeypatch.setattr(PDDLEnv, "__init__", broken)
    with pytest.raises(Exception, match="the env could not start"):  # in Hydra's wrapper
        pipeline.run(_cfg(tmp_path))
    if run_dir is None:  # a fresh folder: removed with what the failed start wrote
        assert not list((tmp_path / "results").rglob("seed0"))
        return
    *_, last = _invocations(tmp_path)
    assert last["finished"] is not None and last["status"] == "error"
    assert "RuntimeError('the env could not start')" in last["outcome"]
    assert _lock_is_free(run_dir)
