"""The live Wikipedia backend (with a client double, no network), its cache and the replay."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from mediawiki.exceptions import DisambiguationError, HTTPTimeoutError, PageError

from memarena.core.errors import ConfigError, MemarenaError
from memarena.envs.wiki import live
from memarena.envs.wiki.backends import SearchResult, WikiBackend
from memarena.envs.wiki.cache import ReplayWiki, SearchCache, WikiCacheMiss, normalize_query
from memarena.envs.wiki.live import LiveWiki, page_text

OBAMA_CONTENT = (
    "Barack Hussein Obama II is an American politician.\n"
    "He served as the 44th president of the United States.\n"
    "\n\n== Early life and career ==\n"
    "Obama was born in Honolulu, Hawaii.\n"
    "\n\n\n=== Education ===\n"
    "   He graduated from Columbia University in 1983.  \n"
    "\n\n== References ==\n"
)
OBAMA_TEXT = (
    "Barack Hussein Obama II is an American politician.\n"
    "He served as the 44th president of the United States.\n"
    "Obama was born in Honolulu, Hawaii.\n"
    "He graduated from Columbia University in 1983."
)


class FakePage:
    def __init__(self, title: str, content: str):
        self.title = title
        self.content = content


class FakeClient:
    """The two ``mediawiki.MediaWiki`` methods LiveWiki uses, over a tiny fixed site."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.pages = {"Barack Obama": FakePage("Barack Obama", OBAMA_CONTENT)}
        self.redirects = {"Obama": "Barack Obama"}
        self.disambiguation = {
            "Mercury": [
                "Mercury (planet)",
                "Mercury (element)",
                "Mercury (mythology)",
                "Freddie Mercury",
                "Mercury Records",
                "Mercury (programming language)",
                "Mercury, Nevada",
            ]
        }
        self.search_results = {"Barak Obma": ["Barack Obama", "Obama (surname)", "Barack"]}

    def page(self, title, auto_suggest=True, redirect=True):
        self.calls.append(("page", title, auto_suggest, redirect))
        assert auto_suggest is False and redirect is True
        title = self.redirects.get(title, title)
        if title in self.disambiguation:
            options = self.disambiguation[title]
            raise DisambiguationError(title, options, f"https://en.wikipedia.org/wiki/{title}")
        if title not in self.pages:
            raise PageError(title=title)
        return self.pages[title]

    def search(self, query, results=10):
        self.calls.append(("search", query, results))
        return self.search_results.get(query, [])[:results]


class DeadClient:
    """A client whose every call fails: proves an answer came from the cache."""

    def page(self, *args, **kwargs):
        raise AssertionError("the network was touched")

    search = page


class FlakyClient(FakeClient):
    """Fails ``failures`` times with ``error`` before answering."""

    def __init__(self, failures: int, error: Exception):
        super().__init__()
        self.failures, self.error, self.tries = failures, error, 0

    def page(self, *args, **kwargs):
        self.tries += 1
        if self.tries <= self.failures:
            raise self.error
        return super().page(*args, **kwargs)


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    waited: list[float] = []
    monkeypatch.setattr(live, "_sleep", waited.append)
    return waited


# -- LiveWiki ------------------------------------------------------------------------------------


def test_found_page_strips_headings_and_blank_lines():
    client = FakeClient()
    wiki = LiveWiki(client=client)
    assert isinstance(wiki, WikiBackend) and wiki.name == "live"
    result = wiki.search("Barack Obama")
    assert result == SearchResult(
        query="Barack Obama", found=True, title="Barack Obama", text=OBAMA_TEXT
    )
    assert "==" not in result.text and "\n\n" not in result.text
    assert client.calls == [("page", "Barack Obama", False, True)]


def test_redirect_gives_the_target_title_and_query_is_normalized():
    client = FakeClient()
    result = LiveWiki(client=client).search("  Obama ")
    assert result.found and result.title == "Barack Obama" and result.query == "  Obama "
    assert client.calls == [("page", "Obama", False, True)]


def test_page_text_keeps_equals_signs_inside_paragraphs():
    text = "== Formula ==\nEnergy is E = mc2 in == units ==.\n\n\n==== Deep ====\n= x =\nEnd."
    assert page_text(text) == "Energy is E = mc2 in == units ==.\nEnd."


def test_disambiguation_gives_first_five_options_in_page_order():
    client = FakeClient()
    result = LiveWiki(client=client).search("Mercury")
    assert result == SearchResult(
        query="Mercury",
        found=False,
        similar=[
            "Mercury (planet)",
            "Mercury (element)",
            "Mercury (mythology)",
            "Freddie Mercury",
            "Mercury Records",
        ],
    )
    assert [c[0] for c in client.calls] == ["page"]


def test_missing_page_gives_site_search_suggestions():
    client = FakeClient()
    result = LiveWiki(client=client).search("Barak Obma")
    assert result == SearchResult(
        query="Barak Obma",
        found=False,
        similar=["Barack Obama", "Obama (surname)", "Barack"],
    )
    assert client.calls[-1] == ("search", "Barak Obma", 5)
    assert LiveWiki(client=FakeClient()).search("Qwxzy").similar == []


def test_empty_query_never_touches_the_network():
    result = LiveWiki(client=DeadClient()).search("   ")
    assert result == SearchResult(query="   ", found=False)


def test_network_errors_are_retried_with_backoff(sleeps):
    client = FlakyClient(failures=2, error=ConnectionError("connection reset"))
    result = LiveWiki(client=client, retries=3).search("Barack Obama")
    assert result.found and client.tries == 3
    assert sleeps == [1.0, 2.0]


@pytest.mark.parametrize(
    "error", [ConnectionError("no route to host"), TimeoutError("timed out"), HTTPTimeoutError("q")]
)
def test_repeated_network_failure_raises_a_readable_error(sleeps, error):
    client = FlakyClient(failures=100, error=error)
    with pytest.raises(MemarenaError) as info:
        LiveWiki(client=client, retries=3).search("Barack Obama")
    message = str(info.value)
    assert "Search[Barack Obama]" in message
    assert "env/wiki=replay" in message and "env/wiki=local" in message
    assert client.tries == 4 and sleeps == [1.0, 2.0, 4.0]


def test_failures_are_not_cached(tmp_path, sleeps):
    path = tmp_path / "wiki.sqlite"
    wiki = LiveWiki(client=FlakyClient(failures=100, error=OSError("down")), cache_path=path)
    with pytest.raises(MemarenaError):
        wiki.search("Barack Obama")
    assert len(wiki.cache) == 0
    wiki.close()


def test_missing_pymediawiki_is_a_config_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mediawiki(name, *args, **kwargs):
        if name == "mediawiki" or name.startswith("mediawiki."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mediawiki)
    with pytest.raises(ConfigError, match=r"pip install pymediawiki==0\.7\.5"):
        LiveWiki(client=FakeClient())


# -- the cache and the replay --------------------------------------------------------------------

QUERIES = ["Barack Obama", "Obama", "Mercury", "Barak Obma", "Qwxzy"]


@pytest.fixture
def recorded(tmp_path) -> tuple[Path, dict[str, SearchResult]]:
    """A cache file recorded by LiveWiki over the fake site, and what LiveWiki answered."""
    path = tmp_path / "cache" / "wiki.sqlite"
    wiki = LiveWiki(client=FakeClient(), cache_path=path)
    answers = {q: wiki.search(q) for q in QUERIES}
    assert len(wiki.cache) == len(QUERIES)
    wiki.close()
    return path, answers


def test_cached_queries_are_answered_without_the_network(recorded):
    path, answers = recorded
    wiki = LiveWiki(client=DeadClient(), cache_path=path)
    for query, answer in answers.items():
        assert wiki.search(query).to_dict() == answer.to_dict()
    # The same query, spaced differently, is the same cache entry.
    assert wiki.search(" Barack   Obama ").title == "Barack Obama"
    wiki.close()


def test_cache_key_includes_the_language(recorded):
    path, _ = recorded
    wiki = LiveWiki(lang="de", client=DeadClient(), cache_path=path)
    with pytest.raises(AssertionError, match="network was touched"):
        wiki.search("Barack Obama")
    wiki.close()


def test_replay_returns_what_live_returned(recorded):
    path, answers = recorded
    replay = ReplayWiki(path)
    assert isinstance(replay, WikiBackend) and replay.name == "replay"
    assert replay.bind(None) is replay  # type: ignore[arg-type]
    for query, answer in answers.items():
        assert replay.search(query).to_dict() == answer.to_dict()
    replay.close()


def test_replay_miss_names_query_file_and_fix(recorded):
    path, _ = recorded
    replay = ReplayWiki(path)
    with pytest.raises(WikiCacheMiss) as info:
        replay.search("Michelle Obama")
    message = str(info.value)
    assert isinstance(info.value, MemarenaError)
    assert "Michelle Obama" in message and str(path) in message and "env/wiki=live" in message
    # Case is significant: "barack Obama" was never recorded.
    with pytest.raises(WikiCacheMiss):
        replay.search("Barack obama")
    replay.close()
    with pytest.raises(WikiCacheMiss):
        ReplayWiki(path, source="live:de").search("Barack Obama")


def test_replay_without_cache_file_is_a_config_error(tmp_path):
    missing = tmp_path / "nowhere" / "wiki.sqlite"
    with pytest.raises(ConfigError) as info:
        ReplayWiki(missing)
    assert str(missing) in str(info.value) and "env.wiki.cache_path" in str(info.value)
    assert not missing.parent.exists()


def test_cache_on_a_file_that_is_not_sqlite_is_a_config_error(tmp_path):
    bogus = tmp_path / "wiki.sqlite"
    bogus.write_text("not a database " * 100)
    with pytest.raises(ConfigError, match="env.wiki.cache_path"):
        ReplayWiki(bogus)


def test_normalize_query_keeps_case():
    assert normalize_query("  Red \t Meat\n ") == "Red Meat"
    assert normalize_query("red meat") != normalize_query("Red Meat")


def test_search_cache_survives_reopen(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = SearchCache(path)
    first = SearchResult(query="A", found=True, title="A", text="a\nb")
    cache.put("live:en", "A", first)
    cache.put("live:en", "B", SearchResult(query="B", found=False, similar=["B1", "B2"]))
    cache.put("live:en", "A", SearchResult(query="A", found=True, title="A", text="new"))
    assert len(cache) == 2
    cache.close()

    cache = SearchCache(path)
    assert len(cache) == 2
    assert cache.get("live:en", "A").text == "new"
    assert cache.get("live:en", "B").similar == ["B1", "B2"]
    assert cache.get("live:en", " B ").query == " B "
    assert cache.get("live:fr", "A") is None and cache.get("live:en", "C") is None
    assert ("live:en", "A") in cache
    cache.close()


def test_search_cache_concurrent_writes_from_two_connections(tmp_path):
    path = tmp_path / "c.sqlite"
    one, two = SearchCache(path), SearchCache(path)
    for i in range(50):
        one.put("live:en", f"one {i}", SearchResult(query=f"one {i}", found=False))
        two.put("live:en", f"two {i}", SearchResult(query=f"two {i}", found=True, title="T"))
    assert len(one) == len(two) == 100
    assert one.get("live:en", "two 49").title == "T"
    assert two.get("live:en", "one 0") == SearchResult(query="one 0", found=False)
    one.close()
    two.close()


def _write_many(path: str, tag: str, n: int) -> None:
    cache = SearchCache(path)
    for i in range(n):
        cache.put("live:en", f"{tag} {i}", SearchResult(query=f"{tag} {i}", found=False))
    cache.close()


def test_search_cache_concurrent_writes_from_two_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    SearchCache(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(path, tag, 100)) for tag in ("p", "q")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    cache = SearchCache(path)
    assert len(cache) == 200
    cache.close()
