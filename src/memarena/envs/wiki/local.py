"""Local Wikipedia backends: a JSONL corpus indexed with bm25s, and per-question corpora.

``LocalWiki`` reads one or more JSONL files (a file, a folder of ``*.jsonl``, or a glob) of pages
in any of these shapes:

- ``{"title": ..., "text": ...}`` (paragraphs separated by newlines);
- the FEVER ``wiki-pages`` dump: ``{"id": "Soul_Food_-LRB-film-RRB-", "text": ..., "lines":
  "0\\tsentence\\t<links>\\n1\\t..."}`` (titles and PTB tokens are cleaned for display);
- HotpotQA-style ``{"title": ..., "sentences": [...]}``.

``Search`` opens the page whose title matches the query (case-insensitive, FEVER underscores and
brackets cleaned); otherwise it suggests up to five titles: first pages named ``query (...)``
(disambiguation-style), then the BM25 ranking over title + first paragraph. Page texts are not
held in memory: each page is read from its file by byte offset, so a large dump fits. The index
(titles, offsets, BM25 matrices) is saved under ``cache_dir`` keyed by the files' paths, sizes
and modification times, and reused by later runs (built once under a lock when several jobs
share ``cache_dir``; an index whose manifest does not verify is rebuilt).
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from memarena.core.cache_build import build_once
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.wiki.backends import SearchResult, clean_text, clean_title, title_key

log = logging.getLogger(__name__)

INDEX_VERSION = 1
SIMILAR = 5


@dataclass(frozen=True)
class Page:
    title: str
    text: str


def page_from_record(record: dict[str, Any]) -> Page | None:
    """A page from one JSONL record (see the module doc for the accepted shapes)."""
    title = record.get("title") or record.get("id")
    if not title:
        return None
    if isinstance(record.get("sentences"), list):
        text = "".join(str(s) for s in record["sentences"])
    elif record.get("lines"):
        sentences = [ln.split("\t")[1] for ln in str(record["lines"]).split("\n") if "\t" in ln]
        text = " ".join(s for s in sentences if s.strip())
    else:
        text = str(record.get("text") or "")
    text = clean_text(text)
    return Page(clean_title(str(title)), text) if text else None


def corpus_files(path: str | os.PathLike[str]) -> list[Path]:
    """The JSONL files named by ``path`` (a file, a folder of ``*.jsonl``, or a glob)."""
    text = os.path.expanduser(str(path))
    if any(ch in text for ch in "*?["):
        found = sorted(Path(p) for p in glob.glob(text))
    elif Path(text).is_dir():
        found = sorted(Path(text).glob("*.jsonl"))
    else:
        found = [Path(text)] if Path(text).is_file() else []
    if not found:
        raise ConfigError(
            f"memarena: env.wiki.path={path!r} names no JSONL corpus file (give a .jsonl file, a "
            "folder of .jsonl files such as FEVER's wiki-pages/, or a glob). Each line is a page: "
            '{"title": ..., "text": ...}.'
        )
    return found


def _iter_records(files_: list[Path]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for file_id, file in enumerate(files_):
        with open(file, "rb") as fh:
            offset = 0
            for lineno, line in enumerate(fh, 1):
                here, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except UnicodeDecodeError as err:
                    raise ConfigError(
                        f"memarena: {file}:{lineno} is not UTF-8 text (byte "
                        f"{line[err.start]:#04x} at column {err.start + 1}): a binary or corrupt "
                        "file? Each line of a wiki corpus is one JSON page."
                    ) from None
                except json.JSONDecodeError as err:
                    raise ConfigError(
                        f"memarena: {file}:{lineno} is not valid JSON ({err.msg}); each line of a "
                        'wiki corpus is one page such as {"title": ..., "text": ...}.'
                    ) from None
                if not isinstance(record, dict):
                    raise ConfigError(f"memarena: {file}:{lineno} is not a JSON object.")
                check_page_record(record, f"{file}:{lineno}")
                yield file_id, here, record


def check_page_record(record: dict[str, Any], where: str) -> None:
    """ConfigError naming ``where`` and the field when a page record's field has the wrong
    type (see the module doc for the accepted shapes)."""
    expected = {
        "title": (str, "text"),
        "id": ((str, int), "text or an int"),
        "text": (str, "text"),
        "lines": (str, "text (FEVER's tab-separated lines)"),
    }
    for key, (types, what) in expected.items():
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise ConfigError(
                f"memarena: {where}, field {key}: is {value!r:.60}, not {what}. Each line of a "
                'wiki corpus is one page such as {"title": ..., "text": ...}.'
            )
    sentences = record.get("sentences")
    if sentences is not None and (
        not isinstance(sentences, list) or not all(isinstance(x, str) for x in sentences)
    ):
        raise ConfigError(
            f"memarena: {where}, field sentences: is {sentences!r:.60}, not a list of sentence "
            'strings (HotpotQA-style pages are {"title": ..., "sentences": [...]}).'
        )


def _first_paragraph(text: str) -> str:
    return text.split("\n", 1)[0]


class _Index:
    """Titles, where each page lies, and a BM25 index over title + first paragraph."""

    def __init__(self, titles: list[str], locations: np.ndarray, retriever: Any, tokenizer: Any):
        self.titles = titles
        self.locations = locations  # (n, 2) int64: file id, byte offset; -1 offset: in memory
        self.retriever = retriever
        self.tokenizer = tokenizer
        self.by_key: dict[str, int] = {}
        self.by_base: dict[str, list[int]] = {}
        for i, title in enumerate(titles):
            key = title_key(title)
            self.by_key.setdefault(key, i)
            base = key.split(" (", 1)[0]
            if base != key:
                self.by_base.setdefault(base, []).append(i)

    @staticmethod
    def build(titles: list[str], docs: list[str], locations: np.ndarray, title_weight: int):
        import bm25s
        from bm25s.tokenization import Tokenizer

        tokenizer = Tokenizer(stopwords="en")
        texts = [" ".join([t] * title_weight + [d]) for t, d in zip(titles, docs, strict=True)]
        ids = tokenizer.tokenize(texts, return_as="ids", show_progress=len(texts) > 50_000)
        retriever = bm25s.BM25()
        retriever.index(ids, show_progress=len(texts) > 50_000)
        return _Index(titles, locations, retriever, tokenizer)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        # An index built from token ids has int vocabulary keys. bm25s writes them with orjson
        # when it is installed (langmem's dependencies bring it), which refuses int keys; the
        # standard json module writes them as strings. Save string keys either way.
        vocab = self.retriever.vocab_dict
        self.retriever.vocab_dict = {str(k): v for k, v in vocab.items()}
        try:
            self.retriever.save(str(folder / "bm25"))
        finally:
            self.retriever.vocab_dict = vocab
        self.tokenizer.save_vocab(str(folder / "bm25"))
        np.save(folder / "locations.npy", self.locations)
        (folder / "titles.json").write_text(json.dumps(self.titles), encoding="utf-8")
        (folder / "COMPLETE").write_text(str(INDEX_VERSION))

    @staticmethod
    def load(folder: Path) -> _Index:
        import bm25s
        from bm25s.tokenization import Tokenizer

        retriever = bm25s.BM25.load(str(folder / "bm25"))
        tokenizer = Tokenizer(stopwords="en")
        tokenizer.load_vocab(str(folder / "bm25"))
        titles = json.loads((folder / "titles.json").read_text(encoding="utf-8"))
        return _Index(titles, np.load(folder / "locations.npy"), retriever, tokenizer)

    def rank(self, query: str, k: int) -> list[int]:
        k = min(k, len(self.titles))
        if k == 0:
            return []
        ids = self.tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )
        docs, scores = self.retriever.retrieve(ids, k=k, show_progress=False, n_threads=1)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class LocalWiki:
    """A JSONL corpus behind :class:`~memarena.envs.wiki.backends.WikiBackend`.

    Args:
        path: a JSONL file, a folder of ``*.jsonl`` files, or a glob.
        cache_dir: where the index is saved and reused (null: rebuilt on every start).
        title_weight: how many times the title is repeated in the indexed text (title matches
            rank first among suggestions).
        name: backend name recorded in results.
    """

    def __init__(
        self,
        path: str | None = None,
        cache_dir: str | None = None,
        title_weight: int = 2,
        name: str = "local",
        pages: list[Page] | None = None,
    ) -> None:
        self.name = name
        self._memory: list[Page] | None = None
        self._handles: dict[int, Any] = {}
        if pages is not None:  # an in-memory corpus (per-question paragraphs, tests)
            self._memory = list(pages)
            self._files: list[Path] = []
            locations = np.full((len(pages), 2), -1, dtype=np.int64)
            self.index = _Index.build(
                [p.title for p in pages],
                [_first_paragraph(p.text) for p in pages],
                locations,
                title_weight,
            )
            return
        if not path:
            raise ConfigError(
                "memarena: env.wiki.path is not set. Point it at a JSONL corpus (one page per "
                'line, {"title": ..., "text": ...}; FEVER\'s wiki-pages/ folder works as is), '
                "e.g. env/wiki=local env.wiki.path=/data/fever/wiki-pages."
            )
        self._files = corpus_files(path)
        folder = self._cache_folder(cache_dir, title_weight)
        if folder is None:
            self.index = self._build_index(path, title_weight)
            return
        built: list[_Index] = []

        def build(tmp: Path) -> None:
            built.append(self._build_index(path, title_weight))
            built[0].save(tmp)

        # several jobs may share cache_dir: one builds under a lock, the others reuse its index
        build_once(folder, build, what="the wiki index")
        if built:
            self.index = built[0]
        else:
            self.index = _Index.load(folder)
            log.info("wiki: loaded index of %d pages from %s", len(self.index.titles), folder)

    def _build_index(self, path: str, title_weight: int) -> _Index:
        titles, docs, locs = [], [], []
        for file_id, offset, record in _iter_records(self._files):
            page = page_from_record(record)
            if page is not None:
                titles.append(page.title)
                docs.append(_first_paragraph(page.text))
                locs.append((file_id, offset))
        if not titles:
            raise ConfigError(f"memarena: env.wiki.path={path!r} holds no pages with text.")
        locations = np.asarray(locs, dtype=np.int64).reshape(-1, 2)
        index = _Index.build(titles, docs, locations, title_weight)
        log.info("wiki: indexed %d pages from %d file(s)", len(titles), len(self._files))
        return index

    def _cache_folder(self, cache_dir: str | None, title_weight: int) -> Path | None:
        if not cache_dir:
            return None
        digest = hashlib.sha256(f"v{INDEX_VERSION}:w{title_weight}".encode())
        for f in self._files:
            st = f.stat()
            digest.update(f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
        return Path(cache_dir) / f"index-{digest.hexdigest()[:16]}"

    def __len__(self) -> int:
        return len(self.index.titles)

    def page(self, i: int) -> Page:
        if self._memory is not None:
            return self._memory[i]
        file_id, offset = (int(v) for v in self.index.locations[i])
        fh = self._handles.get(file_id)
        if fh is None:
            fh = self._handles[file_id] = open(self._files[file_id], "rb")  # noqa: SIM115
        fh.seek(offset)
        page = page_from_record(json.loads(fh.readline()))
        assert page is not None, f"index points at an empty page in {self._files[file_id]}"
        return page

    def search(self, query: str) -> SearchResult:
        query = " ".join(str(query).split())
        key = title_key(query)
        hit = self.index.by_key.get(key)
        if hit is not None:
            page = self.page(hit)
            return SearchResult(query, True, title=page.title, text=page.text)
        base = key.split(" (", 1)[0]  # "x (song)" and "x" both suggest "x" and "x (...)" pages
        named = [self.index.by_key[base]] if base != key and base in self.index.by_key else []
        similar = [*named, *self.index.by_base.get(base, [])][:SIMILAR]
        for i in self.index.rank(query, SIMILAR + len(similar)):
            if len(similar) >= SIMILAR:
                break
            if i not in similar:
                similar.append(i)
        return SearchResult(query, False, similar=[self.index.titles[i] for i in similar])

    def bind(self, task: Task) -> LocalWiki:
        return self

    def close(self) -> None:
        for fh in self._handles.values():
            fh.close()
        self._handles.clear()


SMOKE_CORPUS = "smoke_wiki.jsonl"


def smoke_wiki(name: str = "smoke") -> LocalWiki:
    """The embedded synthetic encyclopedia of the smoke sets (written for memarena; fiction)."""
    return LocalWiki(path=str(files("memarena.envs.wiki") / "data" / SMOKE_CORPUS), name=name)


class ContextWiki:
    """HotpotQA's distractor setting: each question's own context paragraphs are the corpus.

    ``bind(task)`` builds a small :class:`LocalWiki` from ``task.payload["context"]`` (a list of
    ``[title, [sentences]]``); indexes of recent questions are kept (``keep`` of them).
    """

    def __init__(self, name: str = "context", keep: int = 256) -> None:
        self.name = name
        self.keep = int(keep)
        self._bound: dict[str, LocalWiki] = {}

    def bind(self, task: Task) -> LocalWiki:
        wiki = self._bound.get(task.id)
        if wiki is None:
            context = task.payload.get("context")
            if not context:
                raise ConfigError(
                    f"memarena: env/wiki=context needs each task's context paragraphs, and task "
                    f"{task.id} has none (FEVER and fullwiki questions bring no context). Use "
                    "env/wiki=local (with env.wiki.path), live or replay instead."
                )
            pages = [Page(clean_title(t), clean_text("".join(s))) for t, s in context]
            wiki = LocalWiki(pages=[p for p in pages if p.text], name=self.name)
            if len(self._bound) >= self.keep:
                self._bound.pop(next(iter(self._bound)))
            self._bound[task.id] = wiki
        return wiki

    def search(self, query: str) -> SearchResult:
        raise ConfigError(
            "memarena: env/wiki=context answers searches only for a task (bind(task) first)."
        )

    def close(self) -> None:
        self._bound.clear()
