"""ReAct Wikipedia episode and the local backends: observation strings, exact match, bm25s
search on a corpus built here, HotpotQA context corpora, cache replay, the expert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memarena.core import Episode
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.wiki import ContextWiki, LocalWiki, ReplayWiki, SearchCache, smoke_wiki
from memarena.envs.wiki.answers import exact_match, normalize_answer
from memarena.envs.wiki.backends import clean_title
from memarena.envs.wiki.react import WikiEpisode, page_sentences, parse_react_action

PAGES = [
    {
        "title": "Kestrel Bay",
        "text": "Kestrel Bay is a town. It lies on the coast. It has a port."
        "\nThe port opened in 1850. Fishing boats use the port.",
    },
    {"title": "Kestrel Bay (film)", "text": "Kestrel Bay is a 2001 film. It was shot in Norway."},
    {"title": "Kestrel Bay (album)", "text": "Kestrel Bay is an album by the Gulls."},
    {"title": "The Gulls", "text": "The Gulls are a band from Kestrel Bay. They formed in 1990."},
    {"title": "Harbour lighthouse", "text": "The lighthouse guards the harbour of Kestrel Bay."},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    return path


def task(answer: str = "SUPPORTS", gold: list[str] | None = None) -> Task:
    payload = {"answer": answer, "gold_titles": gold if gold is not None else ["Kestrel Bay"]}
    return Task("t/test/1", "t", "test", "d", "Claim: Kestrel Bay has a port.", payload)


def episode(wiki, **kw) -> WikiEpisode:
    return WikiEpisode(task(**kw), wiki, exact_match, ["REFUTES", "NOT ENOUGH INFO"])


def test_observation_strings_follow_react(corpus):
    ep = episode(LocalWiki(path=str(corpus)))
    assert isinstance(ep, Episode)
    assert ep.reset().text == "No page is open yet."
    hit = ep.step("Search[kestrel bay]")  # titles match case-insensitively
    assert hit.observation.text == "Kestrel Bay is a town. It lies on the coast. It has a port."
    assert (hit.feedback.valid_action, hit.feedback.state_changed) == (True, True)
    miss = ep.step("Search[Kestrel]")
    assert miss.observation.text == (  # BM25 order: the shortest page with "Kestrel" first
        "Could not find Kestrel. Similar: ['Kestrel Bay (album)', 'Kestrel Bay', "
        "'Kestrel Bay (film)', 'Harbour lighthouse', 'The Gulls']."
    )
    assert miss.feedback.failure_label == "not_found"
    ep.step("Search[Kestrel Bay]")
    first = ep.step("Lookup[port]")
    assert first.observation.text == "(Result 1 / 3) It has a port."
    assert ep.step("Lookup[PORT]").observation.text == "(Result 2 / 3) The port opened in 1850."
    assert ep.step("Lookup[port]").observation.text == "(Result 3 / 3) Fishing boats use the port."
    done = ep.step("Lookup[port]")
    assert done.observation.text == "No more results."
    assert done.feedback.failure_label == "no_more_results"
    assert ep.step("Lookup[coast]").observation.text == "(Result 1 / 1) It lies on the coast."
    bad = ep.step("jump around")
    assert bad.observation.text == "Invalid action: jump around"
    assert bad.feedback.failure_label == "invalid_action" and not bad.done
    end = ep.step("Action: Finish[supports]")
    assert end.done and end.success and end.progress == 1.0
    assert end.observation.text == "Episode finished, reward = 1"


def test_search_miss_suggests_disambiguation_pages_first(corpus):
    wiki = LocalWiki(path=str(corpus))
    result = wiki.search("Kestrel Bay (song)")
    assert not result.found
    # the base title and every "Kestrel Bay (...)" page first, then the BM25 ranking fills up
    assert result.similar[:3] == ["Kestrel Bay", "Kestrel Bay (film)", "Kestrel Bay (album)"]
    assert len(result.similar) == 5
    hit = wiki.search("kestrel bay")
    assert hit.found and hit.title == "Kestrel Bay"
    # only two pages hold "gulls" or "band"
    assert wiki.search("Gulls band").similar == ["The Gulls", "Kestrel Bay (album)"]
    assert wiki.search("zzzz qqqq").similar == []


def test_wrong_finish_and_progress_by_gold_pages(corpus):
    ep = episode(LocalWiki(path=str(corpus)), gold=["Kestrel Bay", "The Gulls"])
    assert ep.expert_action() == "Search[Kestrel Bay]"
    assert ep.step("Search[Kestrel Bay]").progress == pytest.approx(1 / 3)
    assert ep.expert_action() == "Search[The Gulls]"
    assert ep.step("Search[The Gulls]").progress == pytest.approx(2 / 3)
    assert ep.expert_action() == "Finish[SUPPORTS]"
    end = ep.step("Finish[REFUTES]")
    assert end.done and not end.success and end.feedback.failure_label == "wrong_answer"
    assert ep.expert_action() is None
    assert ep.step("Search[The Gulls]").feedback.failure_label == "episode_over"


def test_noise_actions_are_wrong_but_well_formed(corpus):
    ep = episode(LocalWiki(path=str(corpus)))
    noise = ep.noise_actions()
    # the wrong answers, then searches and a lookup on words of the goal
    assert noise == [
        "Finish[REFUTES]",
        "Finish[NOT ENOUGH INFO]",
        "Search[Claim:]",
        "Search[Kestrel]",
        "Search[Bay]",
        "Lookup[Claim:]",
    ]
    assert all(parse_react_action(a) for a in noise)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("Search[Kestrel Bay]", ("search", "Kestrel Bay")),
        ("search [Kestrel  Bay]", ("search", "Kestrel Bay")),
        ("Thought: hmm. Action 2: Lookup[port]", ("lookup", "port")),
        ("Finish[NOT ENOUGH INFO].", ("finish", "NOT ENOUGH INFO")),
        ("Think[first the town]", ("think", "first the town")),
        ("Search Kestrel Bay", None),
    ],
)
def test_parse_react_action(text, parsed):
    assert parse_react_action(text) == parsed


@pytest.mark.parametrize(
    ("prediction", "gold", "match"),
    [
        ("The Beatles", "beatles", True),
        ("  Not enough   info. ", "NOT ENOUGH INFO", True),
        ("an apple!", "Apple", True),
        ("1,000", "1000", True),
        ("yes", "no", False),
        ("Kestrel Bay", "Kestrel", False),
    ],
)
def test_exact_match_after_normalization(prediction, gold, match):
    assert exact_match(prediction, gold) is match


def test_normalize_answer():
    assert normalize_answer("The  Quick, brown fox.") == "quick brown fox"


def test_fever_titles_and_dump_records(tmp_path):
    assert clean_title("Soul_Food_-LRB-film-RRB-") == "Soul Food (film)"
    dump = tmp_path / "wiki-001.jsonl"
    rows = [
        {
            "id": "Soul_Food_-LRB-film-RRB-",
            "text": "ignored",
            "lines": "0\tSoul Food is a 1997 film .\tfilm\n1\tIt was released by Fox 2000 .\t",
        },
        {"id": "", "text": "", "lines": ""},
    ]
    dump.write_text("".join(json.dumps(r) + "\n" for r in rows))
    wiki = LocalWiki(path=str(tmp_path))  # a folder of dump files
    assert len(wiki) == 1
    result = wiki.search("Soul Food (film)")
    assert result.found and result.title == "Soul Food (film)"
    assert result.text == "Soul Food is a 1997 film . It was released by Fox 2000 ."


def test_index_is_cached_and_reused(corpus, tmp_path):
    cache = tmp_path / "cache"
    first = LocalWiki(path=str(corpus), cache_dir=str(cache))
    assert len(list(cache.glob("index-*/COMPLETE"))) == 1
    second = LocalWiki(path=str(corpus), cache_dir=str(cache))
    for q in ("Kestrel Bay", "Kestrel", "The Gulls", "band"):
        assert first.search(q).to_dict() == second.search(q).to_dict()


def test_bad_corpus_paths_give_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="env.wiki.path is not set"):
        LocalWiki()
    with pytest.raises(ConfigError, match="names no JSONL corpus"):
        LocalWiki(path=str(tmp_path / "nope.jsonl"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"title": "A", "text": "a."}\nnot json\n')
    with pytest.raises(ConfigError, match=r"broken.jsonl:2 is not valid JSON"):
        LocalWiki(path=str(broken))


def test_cache_replay_gives_identical_observations(corpus, tmp_path):
    """Record every search result of a session in a SearchCache, then replay the same actions
    through ReplayWiki: every observation is identical."""
    cache_path = tmp_path / "searches.sqlite"
    local = LocalWiki(path=str(corpus))
    cache = SearchCache(cache_path)

    class Recording:
        name = "live"

        def search(self, query):
            result = local.search(query)
            cache.put("live:en", query, result)
            return result

        def bind(self, task):
            return self

        def close(self):
            cache.close()

    actions = [
        "Search[Kestrel]",
        "Search[Kestrel Bay (film)]",
        "Lookup[shot]",
        "Lookup[shot]",
        "Search[The Gulls]",
        "Lookup[1990]",
        "Finish[REFUTES]",
    ]
    first = episode(Recording())
    recorded = [first.step(a).observation.text for a in actions]
    first.wiki.close()
    replay = episode(ReplayWiki(cache_path))
    assert [replay.step(a).observation.text for a in actions] == recorded


def test_context_wiki_builds_a_corpus_per_question():
    context = [
        ["Kestrel Bay", ["Kestrel Bay is a town.", " It has a port."]],
        ["The Gulls", ["The Gulls are a band.", " They formed in 1990."]],
    ]
    t = Task(
        "h/test/1",
        "h",
        "test",
        "bridge",
        "Question: ?",
        {"answer": "1990", "gold_titles": ["The Gulls"], "context": context},
    )
    wiki = ContextWiki()
    bound = wiki.bind(t)
    assert bound is wiki.bind(t) and len(bound) == 2
    assert bound.search("The Gulls").text == "The Gulls are a band. They formed in 1990."
    assert bound.search("Gulls").similar == ["The Gulls"]
    with pytest.raises(ConfigError, match="has none"):
        wiki.bind(task())


def test_page_sentences_split_like_react():
    assert page_sentences("A b. C d.\nE f") == ["A b.", "C d.", "E f."]


def test_smoke_encyclopedia_is_labelled_and_searchable():
    wiki = smoke_wiki()
    assert wiki.name == "smoke" and len(wiki) == 58  # the pages of smoke_wiki.jsonl
    readme = Path(__file__).resolve().parents[2] / "src/memarena/envs/wiki/data/README.md"
    assert "synthetic" in readme.read_text().lower()
