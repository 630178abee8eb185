"""The interface every Wikipedia backend implements, and the text helpers they share.

ReAct's Wikipedia environment has two look-ups: ``Search[entity]`` (open the page titled
``entity``, or list similar titles when there is none) and ``Lookup[keyword]`` (the next sentence
of the open page that contains ``keyword``). Only ``Search`` touches the backend: it returns a
:class:`SearchResult`, and the episode builds every observation from that result. So the live,
local and replay backends give the same observations for the same search results, and a cache of
search results is all a replay needs.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from memarena.core.types import Task

# FEVER's wiki-pages dump writes brackets and some punctuation as PTB tokens.
_PTB = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "-COLON-": ":",
}
_PTB_RE = re.compile("|".join(re.escape(k) for k in _PTB))
_SPACE_RE = re.compile(r"\s+")


@dataclass
class SearchResult:
    """What a backend answers to ``Search[query]``.

    ``found``: a page matched; ``title`` and ``text`` hold it (the whole page, paragraphs
    separated by newlines, so ``Lookup`` can scan it). Otherwise ``similar`` lists up to five
    suggested titles (possibly none).
    """

    query: str
    found: bool
    title: str = ""
    text: str = ""
    similar: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> SearchResult:
        return SearchResult(
            query=str(d["query"]),
            found=bool(d["found"]),
            title=str(d.get("title", "")),
            text=str(d.get("text", "")),
            similar=[str(t) for t in d.get("similar", [])],
        )


@runtime_checkable
class WikiBackend(Protocol):
    """A source of Wikipedia pages for ``Search``.

    ``bind(task)`` returns the backend to use for one episode: most backends return themselves;
    a per-question corpus (HotpotQA distractor paragraphs) builds one from the task.
    """

    name: str

    def search(self, query: str) -> SearchResult: ...

    def bind(self, task: Task) -> WikiBackend: ...

    def close(self) -> None: ...


def clean_title(title: str) -> str:
    """A display title: FEVER's ``Soul_Food_-LRB-film-RRB-`` becomes ``Soul Food (film)``."""
    text = _PTB_RE.sub(lambda m: _PTB[m.group(0)], str(title)).replace("_", " ")
    text = _SPACE_RE.sub(" ", text).strip()
    return text.replace("( ", "(").replace(" )", ")")


def clean_text(text: str) -> str:
    """Page text with PTB tokens restored and runs of spaces collapsed (newlines kept)."""
    text = _PTB_RE.sub(lambda m: _PTB[m.group(0)], str(text))
    lines = [_SPACE_RE.sub(" ", line).strip() for line in text.split("\n")]
    text = "\n".join(line for line in lines if line)
    return text.replace("( ", "(").replace(" )", ")")


def title_key(title: str) -> str:
    """The key two titles are compared by: display form, case-folded, spaces collapsed."""
    return clean_title(title).casefold()
