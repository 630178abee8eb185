"""FEVER Film/TV vs Music partition (MemCo, Appendix F.3), rebuilt from an official FEVER jsonl.

MemCo splits FEVER claims into two semantic source domains, ``A_film_tv`` and ``B_music``, with
100 training claims each and 60 disjoint test claims (30 per domain, balanced over SUPPORTS /
REFUTES / NOT ENOUGH INFO). They labelled the domains with GPT-4o-mini; here a labeller does it:

- :class:`EmbeddingLabeller`: zero-shot, a sentence embedder compares each claim with prototype
  descriptions of each domain (film/TV, music, and everything else);
- :class:`LLMLabeller`: any memarena Backbone, one JSON-schema-constrained request per claim.

:func:`build_partition` then draws the train/test split from the confident labels with a seed.
``scripts/prepare_fever_partition.py`` runs the whole step and writes the partition file.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memarena.core import Backbone
from memarena.core.errors import ConfigError
from memarena.core.jsonl import lines as jsonl_lines
from memarena.core.jsonl import numbered_lines
from memarena.core.llm_types import ChatRequest

log = logging.getLogger(__name__)

DOMAINS = ("A_film_tv", "B_music")
OTHER = "other"
AB_DOMAINS = (*DOMAINS, OTHER)
FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
DEFAULT_MIN_CONFIDENCE = 0.6


@dataclass(frozen=True)
class DomainLabel:
    """The domain a labeller gives one claim."""

    id: int
    ab_domain: str  # one of AB_DOMAINS
    confidence: float  # in [0, 1]
    main_domain: str  # a finer topic, free text (e.g. "film", "song")


class Labeller(Protocol):
    name: str

    def label(self, claims: Sequence[Mapping[str, Any]]) -> list[DomainLabel]:
        """One label per claim, in the same order."""
        ...

    def describe(self) -> dict[str, Any]:
        """Settings worth recording next to the partition."""
        ...


# --------------------------------------------------------------------------- reading claims


def read_claims(path: str | Path) -> list[dict]:
    """Claims of an official FEVER jsonl file (one JSON object per line: id, label, claim, ...).

    Returns the records as they are. Raises ConfigError naming the file and line when the file
    is missing, a line is not JSON, a field is missing or wrong, or an id repeats.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(
            f"memarena: FEVER claims file {path} does not exist. Give an official FEVER jsonl "
            "(e.g. shared_task_dev.jsonl) with one {id, label, claim, ...} object per line."
        )
    claims: list[dict] = []
    seen: dict[int, int] = {}
    with path.open("rb") as handle:
        for lineno, raw in enumerate(jsonl_lines(handle.read()), 1):
            where = f"{path}, line {lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ConfigError(
                    f"memarena: {where} is not UTF-8 text (byte {raw[err.start]:#04x} at column "
                    f"{err.start + 1}): a binary or corrupt file? Give an official FEVER jsonl."
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ConfigError(
                    f"memarena: {where} is not valid JSON ({err.msg} at column {err.colno}). "
                    "An official FEVER file has one JSON object per line."
                ) from err
            if not isinstance(record, dict):
                raise ConfigError(f"memarena: {where} is not a JSON object.")
            missing = [k for k in ("id", "label", "claim") if k not in record]
            if missing:
                raise ConfigError(
                    f"memarena: {where} lacks the field(s) {', '.join(missing)}; an official "
                    "FEVER record has id, label and claim."
                )
            if isinstance(record["id"], bool) or not isinstance(record["id"], int):
                raise ConfigError(f"memarena: {where} has id={record['id']!r}; expected an int.")
            if record["label"] not in FEVER_LABELS:
                raise ConfigError(
                    f"memarena: {where} has label={record['label']!r}; expected one of "
                    f"{', '.join(FEVER_LABELS)}."
                )
            if not isinstance(record["claim"], str) or not record["claim"].strip():
                raise ConfigError(f"memarena: {where} has an empty or non-text claim.")
            _check_evidence(record.get("evidence"), where)
            if record["id"] in seen:
                raise ConfigError(
                    f"memarena: {where} repeats id {record['id']} (first on line "
                    f"{seen[record['id']]})."
                )
            seen[record["id"]] = lineno
            claims.append(record)
    if not claims:
        raise ConfigError(f"memarena: FEVER claims file {path} holds no claims.")
    return claims


# --------------------------------------------------------------------------- embedding labeller

# (main_domain, description) per domain. A claim's score for a domain is its best cosine
# similarity with that domain's descriptions. Written by hand; see the module docstring of
# scripts/prepare_fever_partition.py for how they were checked.
PROTOTYPES: dict[str, list[tuple[str, str]]] = {
    "A_film_tv": [
        ("film", "X is a 2005 film directed by Y."),
        ("film", "The movie stars Z and was released in theaters."),
        ("film", "The film's screenplay, cast, box office gross and premiere."),
        ("film", "An animated feature film produced by a film studio."),
        ("actor", "X is an actor known for film roles."),
        ("actor", "The actress starred as a character in the movie and the TV show."),
        ("director", "X is a film director, screenwriter and film producer."),
        ("tv_series", "X is a television series that aired on a TV network."),
        ("tv_series", "A sitcom or drama TV show that ran for several seasons."),
        ("episode", "An episode of the television series aired in its third season."),
        ("tv_series", "X hosted a television program or reality show."),
        ("film_awards", "The film won an Academy Award; the series won an Emmy Award."),
    ],
    "B_music": [
        ("song", "X is a song recorded by the singer Y."),
        ("song", "A single from the album that charted on the Billboard Hot 100."),
        ("album", "X is a studio album by the band, released in 1998."),
        ("singer", "X is a singer, songwriter and recording artist."),
        ("band", "X is a rock band that released records and toured."),
        ("musician", "A musician who plays guitar, drums or piano and composes music."),
        ("record_label", "X is a record label that signed the rapper."),
        ("music_genre", "A music genre such as hip hop, jazz, pop, country or heavy metal."),
        ("music_awards", "The singer won a Grammy Award for the album."),
        ("concert", "A music concert, festival or world tour."),
        ("rapper", "X is a rapper and hip hop artist who released a mixtape."),
    ],
    OTHER: [
        ("sports", "X is a professional football, basketball or baseball player for a team."),
        ("sports", "A sports club, league, tournament or Olympic athlete."),
        ("sports", "A race or championship such as the Tour de France or the World Cup."),
        ("politics", "X is a politician, president or member of parliament."),
        ("politics", "A government, political party, election or war."),
        ("politics", "X served as governor, senator or adviser to the president."),
        ("science", "A scientific topic in biology, chemistry, physics or medicine."),
        ("science", "An animal, plant, disease or chemical compound."),
        ("geography", "X is a city, country, region, river or mountain."),
        ("geography", "A town located in a county or province with a population."),
        ("business", "X is a company, corporation or business founded by an entrepreneur."),
        ("technology", "A technology, software, video game or computer product."),
        ("history", "A historical event, empire, king or religion."),
        ("literature", "X is a novel, book or author of fiction."),
        ("education", "A university, school or academic institution."),
        ("person", "X was born in 1950 and died of cancer."),
        ("person", "X is married and has two children."),
        ("person", "X is a journalist, lawyer, activist or public figure."),
    ],
}


class EmbeddingLabeller:
    """Zero-shot domain labels from a sentence embedder and hand-written domain prototypes.

    Score of a domain = the best cosine similarity between the claim and that domain's
    prototype descriptions. The label is the best-scoring domain; ``confidence`` is its softmax
    probability over the three domain scores at ``temperature`` (a soft margin: two close scores
    give ~0.5, a clear winner approaches 1).
    """

    name = "embedding"

    def __init__(
        self,
        embedder: Any,
        prototypes: Mapping[str, Sequence[tuple[str, str]]] | None = None,
        temperature: float = 0.03,
    ) -> None:
        self.embedder = embedder
        self.prototypes = {d: list(p) for d, p in (prototypes or PROTOTYPES).items()}
        if set(self.prototypes) != set(AB_DOMAINS) or not all(self.prototypes.values()):
            raise ConfigError(
                f"memarena: EmbeddingLabeller needs prototypes for each of {AB_DOMAINS}."
            )
        if temperature <= 0:
            raise ConfigError(f"memarena: temperature={temperature} must be > 0.")
        self.temperature = float(temperature)
        texts = [text for d in AB_DOMAINS for _, text in self.prototypes[d]]
        self._proto = _unit(np.asarray(embedder.encode(texts), dtype=np.float32))
        self._proto_domain = np.array(
            [i for i, d in enumerate(AB_DOMAINS) for _ in self.prototypes[d]]
        )
        self._proto_topic = [topic for d in AB_DOMAINS for topic, _ in self.prototypes[d]]

    def scores(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(domain scores of shape (n, 3), index of the best prototype per text)."""
        emb = _unit(np.asarray(self.embedder.encode(list(texts)), dtype=np.float32))
        sims = emb @ self._proto.T
        domain_scores = np.full((len(texts), len(AB_DOMAINS)), -np.inf, dtype=np.float32)
        for i in range(len(AB_DOMAINS)):
            domain_scores[:, i] = sims[:, self._proto_domain == i].max(axis=1)
        return domain_scores, sims.argmax(axis=1)

    def label(self, claims: Sequence[Mapping[str, Any]]) -> list[DomainLabel]:
        if not claims:
            return []
        domain_scores, best_proto = self.scores([str(c["claim"]) for c in claims])
        logits = domain_scores / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=1, keepdims=True)
        labels = []
        for row, claim in enumerate(claims):
            k = int(probs[row].argmax())
            domain = AB_DOMAINS[k]
            # the finer topic: the best prototype inside the chosen domain
            topic = self._topic_in(row, k, best_proto)
            labels.append(DomainLabel(int(claim["id"]), domain, float(probs[row, k]), topic))
        return labels

    def _topic_in(self, row: int, domain: int, best_proto: np.ndarray) -> str:
        """The best prototype's topic (always inside the chosen domain: max over max)."""
        best = int(best_proto[row])
        if self._proto_domain[best] == domain:
            return self._proto_topic[best]
        return self._proto_topic[int(np.flatnonzero(self._proto_domain == domain)[0])]

    def describe(self) -> dict[str, Any]:
        return {
            "labeller": self.name,
            "embedder": getattr(self.embedder, "name", type(self.embedder).__name__),
            "temperature": self.temperature,
            "prototypes": {d: len(p) for d, p in self.prototypes.items()},
        }


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


# --------------------------------------------------------------------------- LLM labeller

LLM_SYSTEM = (
    "You classify short fact-checking claims (from the FEVER dataset) by topic domain.\n"
    "Domains:\n"
    "- A_film_tv: films, movies, actors and actresses, film directors, screenwriters, film "
    "studios, television series, TV episodes, TV networks' shows, TV presenters, film or TV "
    "awards.\n"
    "- B_music: songs, singles, albums, singers, rappers, bands, musicians, composers, record "
    "labels, music genres, concerts and tours, music charts and awards.\n"
    "- other: anything else (sports, politics, science, geography, companies, books, history, "
    "people known for something other than film, TV or music).\n"
    "Judge by what the claim is about, not by whether it is true. A person known mainly as an "
    "actor belongs to A_film_tv; one known mainly as a musician belongs to B_music.\n"
    "Reply with a JSON object: main_domain (a short snake_case topic such as film, tv_series, "
    "actor, song, album, band, sports, politics), ab_domain (A_film_tv, B_music or other) and "
    "confidence (a number from 0 to 1)."
)

LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "main_domain": {"type": "string", "maxLength": 40},
        "ab_domain": {"type": "string", "enum": list(AB_DOMAINS)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["main_domain", "ab_domain", "confidence"],
    "additionalProperties": False,
}


class LLMLabeller:
    """Domain labels from an LLM Backbone: one JSON-schema-constrained request per claim.

    Requests go to ``backbone.generate`` in batches of ``batch_size``. A completion that does
    not parse as the schema's object becomes ``other`` with confidence 0 and is counted in
    ``unparsable``.
    """

    name = "llm"

    def __init__(self, backbone: Any, batch_size: int = 32, max_tokens: int = 64) -> None:
        if not isinstance(backbone, Backbone):
            raise ConfigError(
                f"memarena: LLMLabeller needs an LLM backbone; {type(backbone).__name__} is not "
                "one (backbone=scripted is the env's expert, not a model)."
            )
        if batch_size < 1:
            raise ConfigError(f"memarena: batch_size={batch_size} must be >= 1.")
        self.backbone = backbone
        self.batch_size = int(batch_size)
        self.max_tokens = int(max_tokens)
        self.unparsable = 0

    def request(self, claim: str) -> ChatRequest:
        return ChatRequest(
            messages=[
                {"role": "system", "content": LLM_SYSTEM},
                {"role": "user", "content": f"Claim: {claim}\nJSON:"},
            ],
            json_schema=LLM_SCHEMA,
            temperature=0.0,
            max_tokens=self.max_tokens,
        )

    def label(self, claims: Sequence[Mapping[str, Any]]) -> list[DomainLabel]:
        labels: list[DomainLabel] = []
        for start in range(0, len(claims), self.batch_size):
            batch = claims[start : start + self.batch_size]
            completions = self.backbone.generate([self.request(str(c["claim"])) for c in batch])
            if len(completions) != len(batch):
                raise RuntimeError(
                    f"backbone {self.backbone.name} returned {len(completions)} completions for "
                    f"{len(batch)} requests"
                )
            for claim, completion in zip(batch, completions, strict=True):
                parsed = parse_llm_label(completion.text)
                if parsed is None:
                    self.unparsable += 1
                    labels.append(DomainLabel(int(claim["id"]), OTHER, 0.0, "unparsable"))
                else:
                    labels.append(DomainLabel(int(claim["id"]), *parsed))
            log.info("labelled %d/%d claims", len(labels), len(claims))
        if self.unparsable:
            log.warning(
                "%d of %d completions did not parse; labelled other with confidence 0",
                self.unparsable,
                len(claims),
            )
        return labels

    def describe(self) -> dict[str, Any]:
        return {
            "labeller": self.name,
            "backbone": getattr(self.backbone, "name", type(self.backbone).__name__),
            "batch_size": self.batch_size,
            "unparsable": self.unparsable,
        }


def parse_llm_label(text: str) -> tuple[str, float, str] | None:
    """(ab_domain, confidence, main_domain) from a completion, or None when it does not parse."""
    try:
        obj = json.loads(text.strip())
    except (json.JSONDecodeError, AttributeError):
        return None
    if not isinstance(obj, dict):
        return None
    domain, conf, topic = obj.get("ab_domain"), obj.get("confidence"), obj.get("main_domain")
    if domain not in AB_DOMAINS or not isinstance(topic, str):
        return None
    if isinstance(conf, bool) or not isinstance(conf, int | float) or not math.isfinite(conf):
        return None
    return domain, min(1.0, max(0.0, float(conf))), topic.strip() or domain


# --------------------------------------------------------------------------- the partition


def build_partition(
    claims: Sequence[Mapping[str, Any]],
    labels: Sequence[DomainLabel],
    n_train: int = 100,
    n_test_per_domain: int = 30,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    seed: int = 0,
) -> list[dict]:
    """Seeded train/test selection per domain from the confident labels.

    For each domain, the candidates are the claims labelled with it at ``confidence >=
    min_confidence``. The test claims (``n_test_per_domain``) are balanced over the three FEVER
    labels (10/10/10 for 30; a label short of candidates is filled from the others); the
    ``n_train`` training claims are drawn from the rest. Rows come ordered train A, train B,
    test A, test B, each block in draw order. The result depends only on (claims, labels,
    arguments), not on the order of ``labels``.
    """
    if n_train < 0 or n_test_per_domain < 0:
        raise ConfigError("memarena: n_train and n_test_per_domain must be >= 0.")
    fever_label = {int(c["id"]): c["label"] for c in claims}
    by_id: dict[int, DomainLabel] = {}
    for lab in labels:
        if lab.id not in fever_label:
            raise ConfigError(f"memarena: label for id {lab.id}, which is not among the claims.")
        if lab.id in by_id:
            raise ConfigError(f"memarena: two labels for claim id {lab.id}.")
        if lab.ab_domain not in AB_DOMAINS:
            raise ConfigError(
                f"memarena: claim {lab.id} has ab_domain={lab.ab_domain!r}; expected one of "
                f"{', '.join(AB_DOMAINS)}."
            )
        by_id[lab.id] = lab

    train_rows: list[dict] = []
    test_rows: list[dict] = []
    for domain in DOMAINS:
        pool = sorted(
            i
            for i, lab in by_id.items()
            if lab.ab_domain == domain and lab.confidence >= min_confidence
        )
        need = n_train + n_test_per_domain
        if len(pool) < need:
            raise ConfigError(
                f"memarena: only {len(pool)} claims are labelled {domain} with confidence >= "
                f"{min_confidence}; the partition needs {need} ({n_train} train + "
                f"{n_test_per_domain} test). Lower min_confidence, ask for fewer claims, or give "
                "a larger claims file."
            )
        rng = random.Random(f"fever-partition:{seed}:{domain}")
        rng.shuffle(pool)
        test = _balanced_draw(pool, fever_label, n_test_per_domain)
        chosen = set(test)
        train = [i for i in pool if i not in chosen][:n_train]
        train_rows += [_row(by_id[i], "train", fever_label[i]) for i in train]
        test_rows += [_row(by_id[i], "test", fever_label[i]) for i in test]
    return train_rows + test_rows


def _balanced_draw(pool: list[int], fever_label: Mapping[int, str], n: int) -> list[int]:
    """``n`` ids from the (shuffled) pool, as even as possible over the FEVER labels."""
    quota = {lab: n // 3 + (1 if k < n % 3 else 0) for k, lab in enumerate(FEVER_LABELS)}
    taken: list[int] = []
    for lab in FEVER_LABELS:
        taken += [i for i in pool if fever_label[i] == lab][: quota[lab]]
    if len(taken) < n:  # a label was short: fill from the rest, in draw order
        chosen = set(taken)
        taken += [i for i in pool if i not in chosen][: n - len(taken)]
    order = {i: k for k, i in enumerate(pool)}
    return sorted(taken, key=order.__getitem__)


def _row(lab: DomainLabel, split: str, fever_label: str) -> dict:
    return {
        "id": lab.id,
        "split": split,
        "ab_domain": lab.ab_domain,
        "label": fever_label,
        "confidence": round(float(lab.confidence), 4),
        "main_domain": lab.main_domain,
    }


def partition_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """{"<split>/<ab_domain>": {label: count, "total": n}}."""
    out: dict[str, Counter] = {}
    for r in rows:
        out.setdefault(f"{r['split']}/{r['ab_domain']}", Counter())[r["label"]] += 1
    return {k: {**dict(sorted(c.items())), "total": sum(c.values())} for k, c in out.items()}


# --------------------------------------------------------------------------- comparison


def _check_evidence(evidence: Any, where: str) -> None:
    """ConfigError naming the field unless ``evidence`` is absent/null or FEVER's list of
    evidence sets, each a list of [annotation id, evidence id, page title or null, sentence id
    or null]."""
    if evidence is None:
        return
    shape = (
        "FEVER's evidence is a list of evidence sets, each a list of [annotation_id, "
        "evidence_id, page title or null, sentence id or null]"
    )
    if not isinstance(evidence, list):
        raise ConfigError(
            f"memarena: {where}, field evidence: is {type(evidence).__name__}, not a list; {shape}."
        )
    for i, group in enumerate(evidence):
        if not isinstance(group, list):
            raise ConfigError(
                f"memarena: {where}, field evidence[{i}]: is {group!r:.60}, not a list; {shape}."
            )
        for j, item in enumerate(group):
            if (
                not isinstance(item, list)
                or len(item) != 4
                or not (item[2] is None or isinstance(item[2], str))
            ):
                raise ConfigError(
                    f"memarena: {where}, field evidence[{i}][{j}]: is {item!r:.60}; {shape}."
                )


MEMCO_FILES = ("fever_ab_train_A_v3.jsonl", "fever_ab_train_B_v3.jsonl", "fever_ab_test_v3.jsonl")


def read_reference_partition(directory: str | Path) -> dict[int, dict]:
    """MemCo's partition (the three ``fever_ab_*_v3.jsonl`` files): id -> {split, ab_domain}."""
    directory = Path(directory)
    ref: dict[int, dict] = {}
    for name in MEMCO_FILES:
        path = directory / name
        if not path.is_file():
            raise ConfigError(
                f"memarena: {path} does not exist; --compare needs a folder with "
                f"{', '.join(MEMCO_FILES)}."
            )
        split = "test" if "test" in name else "train"
        for lineno, line in numbered_lines(path.read_text(encoding="utf-8")):
            try:
                rec = json.loads(line)
                ref[int(rec["id"])] = {"split": split, "ab_domain": rec["ab_domain"]}
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
                raise ConfigError(f"memarena: {path}, line {lineno} is malformed ({err}).") from err
    return ref


def agreement(
    labels: Sequence[DomainLabel],
    reference: Mapping[int, Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """How our labels agree with a reference partition's ab_domain on the reference's ids.

    ``confusion[reference domain][our domain]``; ``missing`` counts reference ids we did not
    label. With ``rows`` (our partition), ``overlap`` counts ids both partitions selected.
    """
    ours = {lab.id: lab for lab in labels}
    confusion = {ref: dict.fromkeys(AB_DOMAINS, 0) for ref in DOMAINS}
    correct = total = missing = 0
    for rid, ref in reference.items():
        lab = ours.get(rid)
        if lab is None:
            missing += 1
            continue
        confusion.setdefault(ref["ab_domain"], dict.fromkeys(AB_DOMAINS, 0))
        confusion[ref["ab_domain"]][lab.ab_domain] += 1
        total += 1
        correct += lab.ab_domain == ref["ab_domain"]
    result: dict[str, Any] = {
        "n": total,
        "missing": missing,
        "accuracy": round(correct / total, 4) if total else None,
        "confusion": confusion,
    }
    if rows:
        picked = {int(r["id"]) for r in rows}
        result["overlap"] = len(picked & set(reference))
    return result


def format_confusion(confusion: Mapping[str, Mapping[str, int]]) -> str:
    """A plain-text table: rows = reference domain, columns = ours."""
    width = max(len(d) for d in AB_DOMAINS) + 2
    lines = ["reference \\ ours".ljust(width + 6) + "".join(d.rjust(width) for d in AB_DOMAINS)]
    for ref, row in confusion.items():
        lines.append(ref.ljust(width + 6) + "".join(str(row[d]).rjust(width) for d in AB_DOMAINS))
    return "\n".join(lines)
