"""A persistent cache of ``Search`` results, and the replay backend that answers from it.

The live backend writes every :class:`SearchResult` it returns into a :class:`SearchCache`; a
later run with ``env/wiki=replay`` on the same file gives the same observations without a network.
The cache is one SQLite file in WAL mode, so several processes (a Hydra multirun) can record into
it at once.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path

from memarena.core.errors import ConfigError, MemarenaError
from memarena.core.types import Task
from memarena.envs.wiki.backends import SearchResult

_SPACE_RE = re.compile(r"\s+")
_BUSY_TIMEOUT_MS = 60_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_results (
    backend TEXT NOT NULL,
    query   TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (backend, query)
)
"""


class WikiCacheMiss(MemarenaError):
    """``env/wiki=replay`` was asked a query its cache file does not hold."""


def normalize_query(query: str) -> str:
    """The form a query is cached under: stripped, runs of whitespace collapsed to one space.

    Case is kept: Wikipedia titles are case-sensitive beyond their first letter ("Red Meat" and
    "Red meat" can be different pages), so ``Search[red Meat]`` and ``Search[red meat]`` are
    cached, and looked up, separately.
    """
    return _SPACE_RE.sub(" ", str(query)).strip()


class SearchCache:
    """Search results on disk, keyed by (backend key, normalized query).

    The backend key says where the results came from (``"live:en"`` for English Wikipedia), so
    one file can hold several sources. ``get`` returns the stored result with ``query`` set to
    the query asked, so a cached answer equals the fresh one for the same query string.
    Writes are single autocommitted statements under WAL, safe from several processes; a writer
    waits up to a minute for a lock held by another.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                str(self.path),
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # autocommit: each put is its own transaction
                check_same_thread=False,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"memarena: {self.path} is not a usable wiki search cache ({exc}). "
                "Point env.wiki.cache_path at a cache file written by env/wiki=live, "
                "or at a new path to start an empty one."
            ) from exc

    def get(self, key: str, query: str) -> SearchResult | None:
        """The cached result for ``query`` from source ``key``, or None."""
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM search_results WHERE backend = ? AND query = ?",
                (key, normalize_query(query)),
            ).fetchone()
        if row is None:
            return None
        result = SearchResult.from_dict(json.loads(row[0]))
        result.query = query
        return result

    def put(self, key: str, query: str, result: SearchResult) -> None:
        """Store ``result`` for ``query`` (replacing an older entry for the same query)."""
        value = json.dumps(result.to_dict(), ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO search_results (backend, query, value) VALUES (?, ?, ?)",
                (key, normalize_query(query), value),
            )

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._conn.execute("SELECT COUNT(*) FROM search_results").fetchone()
        return int(count)

    def __contains__(self, item: tuple[str, str]) -> bool:
        key, query = item
        return self.get(key, query) is not None

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class ReplayWiki:
    """A :class:`~memarena.envs.wiki.backends.WikiBackend` answering only from a cache file.

    ``cache_path`` is a file written by ``env/wiki=live``; ``source`` is the backend key the
    results were recorded under (``"live:en"`` for ``LiveWiki(lang="en")``). Never touches the
    network: a query the file does not hold raises :class:`WikiCacheMiss`.
    """

    name = "replay"

    def __init__(self, cache_path: str | Path, source: str = "live:en"):
        path = Path(cache_path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"memarena: env/wiki=replay has no cache file at {path} (env.wiki.cache_path). "
                "Record one first with env/wiki=live (needs internet) and the same "
                "env.wiki.cache_path, or set env.wiki.cache_path to an existing cache file."
            )
        self.source = source
        self.cache = SearchCache(path)

    def search(self, query: str) -> SearchResult:
        result = self.cache.get(self.source, query)
        if result is None:
            raise WikiCacheMiss(
                f"memarena: env/wiki=replay has no cached result for Search[{query}] "
                f"(source {self.source}) in {self.cache.path} (env.wiki.cache_path). "
                "Record it first with env/wiki=live (needs internet) writing to the same "
                "env.wiki.cache_path, then replay."
            )
        return result

    def bind(self, task: Task) -> ReplayWiki:
        return self

    def close(self) -> None:
        self.cache.close()
