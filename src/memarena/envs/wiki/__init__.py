"""Wikipedia for the ReAct benchmarks (FEVER, HotpotQA): backends, episode, shared env base.

Backends (``conf/env/wiki``): ``smoke`` (the embedded synthetic encyclopedia), ``local`` (a JSONL
corpus indexed with bm25s), ``live`` (Wikipedia through pymediawiki, every search cached on
disk), ``replay`` (answers only from such a cache) and ``context`` (HotpotQA distractor: each
question's own paragraphs).
"""

from memarena.envs.wiki.backends import SearchResult, WikiBackend
from memarena.envs.wiki.cache import ReplayWiki, SearchCache, WikiCacheMiss
from memarena.envs.wiki.live import LiveWiki
from memarena.envs.wiki.local import ContextWiki, LocalWiki, smoke_wiki

__all__ = [
    "ContextWiki",
    "LiveWiki",
    "LocalWiki",
    "ReplayWiki",
    "SearchCache",
    "SearchResult",
    "WikiBackend",
    "WikiCacheMiss",
    "smoke_wiki",
]
