"""ReAct's ``Search`` over live Wikipedia, through ``pymediawiki``, recorded for offline replay.

``Search[entity]`` opens the page titled exactly ``entity`` (no auto-suggest; redirects are
followed). A disambiguation page gives its first five options as similar titles; a missing page
gives the first five titles of the site's own search for the query. Every result goes into the
:class:`~memarena.envs.wiki.cache.SearchCache` at ``cache_path`` (when given) before it is
returned, and a query already there is answered from it without the network, so
``env/wiki=replay`` on the same file repeats the run offline.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError, MemarenaError
from memarena.core.types import Task
from memarena.envs.wiki.backends import SearchResult
from memarena.envs.wiki.cache import SearchCache, normalize_query

PYMEDIAWIKI_PIN = "pymediawiki==0.7.5"
N_SIMILAR = 5
BACKOFF_BASE_S = 1.0

# "== History ==", "=== Early life ===": section headings in the API's plain-text extract.
_HEADING_RE = re.compile(r"^\s*(=+)\s*[^=].*?\s*\1\s*$")

# Tests replace this to skip the waits between retries.
_sleep = time.sleep


def _mediawiki_modules() -> tuple[Any, Any]:
    """The ``mediawiki`` package and its exceptions module, imported on first use."""
    try:
        import mediawiki
        import mediawiki.exceptions
    except ImportError as exc:
        raise ConfigError(
            "memarena: env/wiki=live needs the pymediawiki package, which is not installed. "
            f"Install it with `pip install {PYMEDIAWIKI_PIN}`, or use env/wiki=replay or "
            "env/wiki=local to run without live Wikipedia."
        ) from exc
    return mediawiki, mediawiki.exceptions


def page_text(content: str) -> str:
    """A page's plain text for ``Lookup``: section headings dropped, one paragraph per line."""
    lines = (line.strip() for line in str(content).split("\n"))
    return "\n".join(line for line in lines if line and not _HEADING_RE.match(line))


def _first_titles(titles: Any, n: int = N_SIMILAR) -> list[str]:
    """The first ``n`` distinct non-empty titles, in order."""
    out: list[str] = []
    for title in titles or []:
        title = str(title).strip()
        if title and title not in out:
            out.append(title)
        if len(out) == n:
            break
    return out


class LiveWiki:
    """A :class:`~memarena.envs.wiki.backends.WikiBackend` over live Wikipedia.

    ``lang``: the Wikipedia edition (``"en"``). ``cache_path``: a :class:`SearchCache` file that
    records every result and answers repeated queries (key ``f"live:{lang}"``); None keeps
    nothing. ``timeout``: seconds per HTTP request. ``retries``: further attempts after a network
    error or timeout, waiting 1 s, 2 s, 4 s, ... between them. ``client``: an object with the
    ``page`` and ``search`` methods of ``mediawiki.MediaWiki`` (tests pass a double); by default
    one is built on the first query that misses the cache.
    """

    name = "live"

    def __init__(
        self,
        lang: str = "en",
        cache_path: str | Path | None = None,
        user_agent: str = "memarena (research harness)",
        timeout: float = 10.0,
        retries: int = 3,
        client: Any = None,
    ):
        if retries < 0:
            raise ConfigError(
                f"memarena: env.wiki.retries is {retries}; set it to 0 (one try) or more."
            )
        self.lang = lang
        self.key = f"live:{lang}"
        self.user_agent = user_agent
        self.timeout = float(timeout)
        self.retries = int(retries)
        self._client = client
        # Checked here so a missing package fails at start-up, not at the first query.
        self._mw, self._exc = _mediawiki_modules()
        self.cache = SearchCache(cache_path) if cache_path is not None else None

    # -- the WikiBackend protocol ---------------------------------------------------------------

    def search(self, query: str) -> SearchResult:
        if self.cache is not None:
            cached = self.cache.get(self.key, query)
            if cached is not None:
                return cached
        title = normalize_query(query)
        if not title:
            result = SearchResult(query=query, found=False)
        else:
            result = self._with_retries(query, lambda: self._lookup(query, title))
        if self.cache is not None:
            self.cache.put(self.key, query, result)
        return result

    def bind(self, task: Task) -> LiveWiki:
        return self

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    # -- internals ------------------------------------------------------------------------------

    def _client_or_connect(self) -> Any:
        # MediaWiki() queries the site's info on construction, so it is built lazily (and
        # inside the retry loop): a run answered from the cache never touches the network.
        if self._client is None:
            self._client = self._mw.MediaWiki(
                lang=self.lang, timeout=self.timeout, user_agent=self.user_agent
            )
        return self._client

    def _lookup(self, query: str, title: str) -> SearchResult:
        client = self._client_or_connect()
        try:
            page = client.page(title, auto_suggest=False, redirect=True)
            return SearchResult(
                query=query, found=True, title=str(page.title), text=page_text(page.content)
            )
        except self._exc.DisambiguationError as err:
            options = getattr(err, "unordered_options", None) or err.options
            return SearchResult(query=query, found=False, similar=_first_titles(options))
        except self._exc.PageError:
            titles = client.search(title, results=N_SIMILAR)
            return SearchResult(query=query, found=False, similar=_first_titles(titles))

    def _with_retries(self, query: str, fn: Any) -> SearchResult:
        # requests' exceptions derive from OSError, as do socket timeouts.
        transient = (OSError, self._exc.HTTPTimeoutError)
        for attempt in range(self.retries + 1):
            try:
                return fn()
            except transient as err:
                if attempt == self.retries:
                    tries = "1 try" if attempt == 0 else f"{attempt + 1} tries"
                    raise MemarenaError(
                        f"memarena: env/wiki=live could not reach {self.lang}.wikipedia.org for "
                        f"Search[{query}] after {tries} "
                        f"({type(err).__name__}: {err}). Check the connection, raise "
                        "env.wiki.timeout or env.wiki.retries, or, when offline, use "
                        "env/wiki=replay (a cache recorded with env/wiki=live) or "
                        "env/wiki=local (a local dump)."
                    ) from err
                _sleep(BACKOFF_BASE_S * 2**attempt)
            except self._exc.MediaWikiBaseException as err:
                raise MemarenaError(
                    f"memarena: env/wiki=live got an error from {self.lang}.wikipedia.org for "
                    f"Search[{query}]: {err}. If it persists, use env/wiki=replay or "
                    "env/wiki=local."
                ) from err
        raise AssertionError("unreachable")
