"""Persistent LLM call cache: one SQLite file, keyed by ``ChatRequest.cache_key(model)``.

A rerun replays every call exactly, and a killed run resumes without paying twice. Several
processes may share one file (Hydra multirun with the joblib launcher): the database runs in
WAL mode, waits on locks instead of failing, and the first writer of a key wins (identical
requests give identical completions, so nothing is lost). WAL needs a local file system; on
NFS-like shares give each job its own ``cache_path``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from memarena.core.errors import ConfigError
from memarena.core.llm_types import Completion

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_CHUNK = 500  # keys per SELECT (SQLite's variable limit is 999 on old builds)
_STORED_FIELDS = (
    "text",
    "prompt_tokens",
    "completion_tokens",
    "choice_index",
    "fallback",
    "prompt_fit",
)


def _encode(completion: Completion) -> str:
    return json.dumps({k: getattr(completion, k) for k in _STORED_FIELDS}, ensure_ascii=False)


def _decode(blob: str) -> Completion:
    data = json.loads(blob)
    return Completion(**{k: data.get(k) for k in _STORED_FIELDS if k in data}, cached=True)


class CallCache:
    """Completions stored by request key; safe for threads and for several processes."""

    def __init__(self, path: str | Path, timeout_s: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._connect()  # fail early, at construction, on a bad path

    # -- connection -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        # a forked child must not reuse its parent's connection
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=self.timeout_s, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                " key TEXT PRIMARY KEY, model TEXT NOT NULL,"
                " completion TEXT NOT NULL, created REAL NOT NULL)"
            )
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                raise ConfigError(
                    f"memarena: the LLM call cache {self.path} has schema version {version}, "
                    f"this code reads version {SCHEMA_VERSION}. Point backbone.cache_path to a "
                    "new file (or delete the old one)."
                )
        except (sqlite3.Error, OSError) as err:
            raise ConfigError(
                f"memarena: cannot open the LLM call cache at {self.path} ({err}). Set "
                "backbone.cache_path to a writable local file, or backbone.cache_path=null to "
                "run without a cache."
            ) from err
        self._conn, self._pid = conn, os.getpid()
        return conn

    # -- reads and writes -------------------------------------------------------------------
    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        """The stored completions among ``keys`` (``cached=True``), by key."""
        found: dict[str, Completion] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            conn = self._connect()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, completion FROM calls WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob in rows:
                    found[key] = _decode(blob)
        return found

    def get(self, key: str) -> Completion | None:
        return self.get_many([key]).get(key)

    def put_many(self, entries: Iterable[tuple[str, str, Completion]]) -> None:
        """Store ``(key, model, completion)`` triples; an existing key is kept as it is."""
        now = time.time()
        rows = [(key, model, _encode(c), now) for key, model, c in entries]
        if not rows:
            return
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO calls (key, model, completion, created) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r})"
