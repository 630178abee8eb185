"""Build a shared cached artefact (a folder) once, safely under parallel jobs.

Several jobs of a multirun (``launcher=joblib``) or several Slurm tasks may ask for the same
cached folder at once: the household suite, a wiki index, converted model weights, the AppWorld
smoke root. :func:`build_once` makes that safe:

- an advisory ``fcntl.flock`` on ``<parent>/.<name>.lock`` (the kind of lock the run store holds:
  the kernel releases it when its process dies) serialises the builders of one folder; a job that
  finds the folder being built waits, then uses what the builder finished;
- the builder writes into a private folder ``<parent>/.<name>.tmp-<pid>-<random>`` and renames
  it onto ``<name>`` (atomic on one filesystem), so no reader ever sees a half-written folder and
  no builder deletes another's work;
- a manifest (``.memarena_manifest.json``, written last) lists every file with its size and, for
  artefacts up to :data:`DEEP_LIMIT` bytes, its sha256; :func:`verify` checks it (plus an optional
  artefact-specific ``check``) before the folder is trusted, and a folder that does not verify is
  rebuilt with a logged warning naming what is wrong.

Standard library only, so ``envs/appworld/smoke_root.py`` (run by AppWorld's own python, without
memarena installed) can load this file by path.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)

MANIFEST = ".memarena_manifest.json"
MANIFEST_VERSION = 1
DEEP_LIMIT = 64 * 1024 * 1024  # artefacts up to this many bytes get a sha256 per file
_CHUNK = 1024 * 1024


class CacheInvalid(Exception):
    """A cached folder does not match its manifest (the message says what differs)."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.name != MANIFEST
    )


def write_manifest(folder: Path) -> dict:
    """List every file under ``folder`` with its size (and sha256 when the artefact is small);
    written last, so a folder with a manifest is complete."""
    files = _files(folder)
    sizes = {p.relative_to(folder).as_posix(): p.stat().st_size for p in files}
    deep = sum(sizes.values()) <= DEEP_LIMIT
    entries = {
        rel: {"size": size, **({"sha256": _sha256(folder / rel)} if deep else {})}
        for rel, size in sizes.items()
    }
    body = {"version": MANIFEST_VERSION, "files": entries}
    text = json.dumps(body, indent=0, sort_keys=True)
    body["checksum"] = hashlib.sha256(text.encode()).hexdigest()
    tmp = folder / f"{MANIFEST}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(body, fh, indent=0, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(folder / MANIFEST)
    return body


def verify(folder: Path, check: Callable[[Path], None] | None = None) -> None:
    """Raise :class:`CacheInvalid` naming the first problem: no folder, no or unreadable
    manifest, a listed file missing or of another size or checksum, or ``check(folder)``
    raising ``CacheInvalid``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CacheInvalid(f"{folder} does not exist")
    path = folder / MANIFEST
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        files = body["files"]
        checksum = body.pop("checksum")
    except FileNotFoundError:
        raise CacheInvalid(
            f"{path} is missing (an interrupted build, or one by an older memarena)"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise CacheInvalid(f"{path} is unreadable ({type(err).__name__}: {err})") from None
    text = json.dumps(body, indent=0, sort_keys=True)
    if hashlib.sha256(text.encode()).hexdigest() != checksum:
        raise CacheInvalid(f"{path} does not match its own checksum")
    for rel, entry in files.items():
        p = folder / rel
        if not p.is_file():
            raise CacheInvalid(f"{p} is listed in {MANIFEST} but missing")
        if p.stat().st_size != entry["size"]:
            raise CacheInvalid(
                f"{p} has {p.stat().st_size} bytes, {MANIFEST} lists {entry['size']}"
            )
        if "sha256" in entry and _sha256(p) != entry["sha256"]:
            raise CacheInvalid(f"{p} does not match its sha256 in {MANIFEST}")
    if check is not None:
        check(folder)


@contextlib.contextmanager
def build_lock(folder: Path, what: str) -> Iterator[None]:
    """Hold ``<parent>/.<name>.lock`` (advisory flock); waits, saying who holds it."""
    folder = Path(folder)
    path = folder.parent / f".{folder.name}.lock"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the build
    except OSError as err:
        raise type(err)(
            err.errno,
            f"cannot build {what} in {folder.parent} ({err.strerror}); point its cache "
            "folder (e.g. paths.cache_dir, paths.models_dir) at a writable one",
            str(path),
        ) from err
    with holding(fh, lambda holder: log.info("waiting for %s: %s builds it at %s", what,
                                             holder, folder)):  # fmt: skip
        yield


def try_flock(fh, mode: int) -> bool:
    """Take the advisory lock ``mode`` (``fcntl.LOCK_EX`` / ``LOCK_SH``) on the open file
    ``fh`` without waiting: True when taken, False when another process holds a conflicting
    one."""
    try:
        fcntl.flock(fh.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def holding(fh, on_busy: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock) on the open file ``fh``, writing who holds it
    into it. When another process holds it, ``on_busy(holder)`` runs first: it raises to
    refuse, or returns to wait for the lock. Closing ``fh`` (at the end) releases it; so does
    the kernel when the holder dies. The run store's lock is this one too."""
    try:
        busy = not try_flock(fh, fcntl.LOCK_EX)
        if busy:  # (outside the except: a refusal is not raised "during" the BlockingIOError)
            fh.seek(0)
            on_busy(fh.read().strip() or "another process")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        fh.write(f"pid {os.getpid()} on {socket.gethostname()} since {started}\n")
        fh.flush()
        yield
    finally:
        fh.close()  # closing releases the lock


def build_once(
    folder: str | os.PathLike[str],
    build: Callable[[Path], None],
    *,
    what: str,
    check: Callable[[Path], None] | None = None,
    adopt: Callable[[Path], bool] | None = None,
) -> Path:
    """``folder``, built by ``build(tmp)`` unless it already verifies; returns ``folder``.

    ``build`` gets a fresh private folder (it does not exist yet; ``build`` may create it or
    write into it after ``tmp.mkdir()``) and writes the whole artefact there; the manifest is
    added after it returns and the folder is renamed onto ``folder``. If ``build`` raises, the
    private folder is removed and the error propagates. ``check`` is an artefact-specific
    verification run after the manifest's (raise :class:`CacheInvalid` to say what is wrong).
    ``adopt(folder)`` says whether a folder without a manifest is a complete one written before
    manifests existed (by a builder that was already atomic): it then gets a manifest in place
    instead of a rebuild (large converted weights are not converted again).
    """
    folder = Path(folder)
    try:
        verify(folder, check)
        return folder
    except CacheInvalid:
        pass
    with build_lock(folder, what):
        if folder.exists():
            try:
                verify(folder, check)  # another process finished it while we waited
                return folder
            except CacheInvalid as err:
                if _adopted(folder, what, check, adopt):
                    return folder
                log.warning("cached %s does not verify: %s; rebuilding it", what, err)
        # holding the lock, any other private folder is a dead builder's leftover
        for stale in folder.parent.glob(f".{folder.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            build(tmp)
            tmp.mkdir(exist_ok=True)
            write_manifest(tmp)  # hashed from these very files: only ``check`` is left to run
            if check is not None:
                check(tmp)
            if folder.exists() or folder.is_symlink():
                old = folder.parent / f".{folder.name}.tmp-{os.getpid()}-old"
                folder.rename(old)
                tmp.rename(folder)
                shutil.rmtree(old, ignore_errors=True)
            else:
                tmp.rename(folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return folder


def _adopted(
    folder: Path,
    what: str,
    check: Callable[[Path], None] | None,
    adopt: Callable[[Path], bool] | None,
) -> bool:
    """True when ``folder`` has no manifest, ``adopt`` accepts it, and it verifies once a
    manifest is written in place (see :func:`build_once`)."""
    if adopt is None or (folder / MANIFEST).exists() or not adopt(folder):
        return False
    log.info("%s at %s predates manifests: writing one in place", what, folder)
    write_manifest(folder)
    try:
        verify(folder, check)
    except CacheInvalid:
        return False
    return True
