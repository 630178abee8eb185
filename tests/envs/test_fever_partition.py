"""FEVER Film/TV vs Music partition: reading claims, labellers, the seeded selection."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memarena.core.errors import ConfigError
from memarena.core.llm_types import Completion
from memarena.core.types import Usage
from memarena.envs.fever.partition import (
    FEVER_LABELS,
    DomainLabel,
    EmbeddingLabeller,
    LLMLabeller,
    agreement,
    build_partition,
    read_claims,
)

# ------------------------------------------------------------------ hand-built claims and labels


def _claims_and_labels(n_per_label: int = 80):
    """Per domain (A, B, other): n_per_label claims of each FEVER label; a third of each
    domain's claims have low confidence."""
    claims, labels = [], []
    cid = 0
    for domain in ("A_film_tv", "B_music", "other"):
        for fever_label in FEVER_LABELS:
            for k in range(n_per_label):
                cid += 1
                claims.append({"id": cid, "label": fever_label, "claim": f"claim {cid}"})
                conf = 0.3 if k % 3 == 0 else 0.95
                labels.append(DomainLabel(cid, domain, conf, domain.lower()))
    return claims, labels


def test_partition_counts_balance_and_disjointness():
    claims, labels = _claims_and_labels()
    rows = build_partition(claims, labels, n_train=100, n_test_per_domain=30, min_confidence=0.6)
    assert len(rows) == 260
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)  # train and test, A and B: disjoint
    blocks = [(r["split"], r["ab_domain"]) for r in rows]
    # ordered train A, train B, test A, test B
    assert blocks == (
        [("train", "A_film_tv")] * 100
        + [("train", "B_music")] * 100
        + [("test", "A_film_tv")] * 30
        + [("test", "B_music")] * 30
    )
    conf = {lab.id: lab for lab in labels}
    fever = {c["id"]: c["label"] for c in claims}
    for r in rows:
        assert conf[r["id"]].ab_domain == r["ab_domain"] != "other"
        # only confident claims (0.95; the 0.3 third is below min_confidence), every field
        assert r == {
            "id": r["id"],
            "split": r["split"],
            "ab_domain": r["ab_domain"],
            "label": fever[r["id"]],
            "confidence": 0.95,
            "main_domain": r["ab_domain"].lower(),
        }
    for domain in ("A_film_tv", "B_music"):
        test = Counter(
            r["label"] for r in rows if r["split"] == "test" and r["ab_domain"] == domain
        )
        assert test == dict.fromkeys(FEVER_LABELS, 10)


def test_partition_is_deterministic_for_a_seed():
    claims, labels = _claims_and_labels()
    first = build_partition(claims, labels, seed=3)
    assert build_partition(claims, list(reversed(labels)), seed=3) == first
    assert build_partition(claims, labels, seed=4) != first


def test_partition_fills_a_short_label_from_the_others():
    claims, labels = _claims_and_labels()
    # only 4 confident NOT ENOUGH INFO claims in film/TV
    nei = [
        lab
        for lab in labels
        if lab.ab_domain == "A_film_tv"
        and lab.confidence > 0.5
        and claims[lab.id - 1]["label"] == "NOT ENOUGH INFO"
    ]
    drop = {lab.id for lab in nei[4:]}
    labels = [DomainLabel(lab.id, "other", 0.9, "x") if lab.id in drop else lab for lab in labels]
    rows = build_partition(claims, labels, n_train=50, n_test_per_domain=30)
    test_a = Counter(
        r["label"] for r in rows if r["split"] == "test" and r["ab_domain"] == "A_film_tv"
    )
    assert sum(test_a.values()) == 30 and test_a["NOT ENOUGH INFO"] == 4


def test_partition_too_few_candidates_is_a_clear_error():
    claims, labels = _claims_and_labels(n_per_label=20)  # ~40 confident claims per domain
    with pytest.raises(ConfigError, match=r"only \d+ claims are labelled A_film_tv.*needs 130"):
        build_partition(claims, labels)


def test_partition_rejects_labels_of_unknown_claims():
    claims, labels = _claims_and_labels()
    with pytest.raises(ConfigError, match="not among the claims"):
        build_partition(claims[:10], labels)


# ------------------------------------------------------------------ read_claims


def test_read_claims_errors_name_file_and_line(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_claims(tmp_path / "missing.jsonl")
    good = {"id": 1, "label": "SUPPORTS", "claim": "X is a film."}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl, line 2 is not valid JSON"):
        read_claims(bad)
    bad.write_text(json.dumps(good) + "\n" + json.dumps({"id": 2, "label": "MAYBE", "claim": "y"}))
    with pytest.raises(ConfigError, match=r"line 2 has label='MAYBE'"):
        read_claims(bad)
    bad.write_text(json.dumps({"id": 2, "claim": "y"}))
    with pytest.raises(ConfigError, match=r"line 1 lacks the field\(s\) label"):
        read_claims(bad)
    bad.write_text(json.dumps(good) + "\n\n" + json.dumps(good) + "\n")
    with pytest.raises(ConfigError, match=r"line 3 repeats id 1"):
        read_claims(bad)


def test_read_claims_on_the_shared_dev_file(shared_data):
    claims = read_claims(shared_data / "gmemory" / "fever_dev.jsonl")
    assert len(claims) == 9999
    assert {c["label"] for c in claims} == set(FEVER_LABELS)


# ------------------------------------------------------------------ LLM labeller


class JSONBackbone:
    """Test double: answers each request with the next canned text; records batch sizes."""

    name = "json-double"

    def __init__(self, answers):
        self.answers = list(answers)
        self.usage = Usage()
        self.batches: list[int] = []
        self.requests = []

    def generate(self, requests):
        self.batches.append(len(requests))
        self.requests += requests
        return [Completion(self.answers.pop(0)) for _ in requests]

    def close(self):
        pass


def test_llm_labeller_parses_json_and_counts_malformed():
    film = json.dumps({"main_domain": "film", "ab_domain": "A_film_tv", "confidence": 0.9})
    music = json.dumps({"main_domain": "song", "ab_domain": "B_music", "confidence": 1.4})
    answers = [film, music, "not json", '{"ab_domain": "sports"}', film] * 8  # 40 claims
    claims = [{"id": i, "label": "SUPPORTS", "claim": f"claim {i}"} for i in range(40)]
    bb = JSONBackbone(answers)
    labeller = LLMLabeller(bb, batch_size=32)
    labels = labeller.label(claims)
    assert bb.batches == [32, 8]
    assert [lab.id for lab in labels] == list(range(40))
    assert labels[0] == DomainLabel(0, "A_film_tv", 0.9, "film")
    assert labels[1] == DomainLabel(1, "B_music", 1.0, "song")  # clipped to [0, 1]
    assert labels[2] == DomainLabel(2, "other", 0.0, "unparsable")
    assert labels[3].ab_domain == "other" and labels[3].confidence == 0.0
    assert labeller.unparsable == 16 and labeller.describe()["unparsable"] == 16
    req = bb.requests[0]
    assert req.json_schema["properties"]["ab_domain"]["enum"] == ["A_film_tv", "B_music", "other"]
    assert "claim 0" in req.messages[-1]["content"]


def test_llm_labeller_refuses_the_expert_policy():
    from memarena.agent import ExpertPolicy

    with pytest.raises(ConfigError, match="needs an LLM backbone"):
        LLMLabeller(ExpertPolicy())


# ------------------------------------------------------------------ embedding labeller


def test_embedding_labeller_on_obvious_claims():
    from memarena.embed.sentence import SentenceEmbedder

    labeller = EmbeddingLabeller(SentenceEmbedder(device="cpu"))
    claims = [
        {
            "id": 1,
            "label": "SUPPORTS",
            "claim": "Night Train is a 1999 film directed by John Lynch.",
        },
        {
            "id": 2,
            "label": "SUPPORTS",
            "claim": "Halo is a song recorded by the band Depeche Mode.",
        },
        {"id": 3, "label": "REFUTES", "claim": "Breaking Bad is a television series on AMC."},
        {"id": 4, "label": "SUPPORTS", "claim": "Abbey Road is a studio album by The Beatles."},
        {"id": 5, "label": "SUPPORTS", "claim": "Paris is the capital city of France."},
        {"id": 6, "label": "REFUTES", "claim": "Barack Obama was a senator from Texas."},
    ]
    labels = labeller.label(claims)
    got = [lab.ab_domain for lab in labels]
    assert got == ["A_film_tv", "B_music", "A_film_tv", "B_music", "other", "other"]
    # softmax at temperature 0.03 over the three best-prototype cosines: clear winners (MiniLM on
    # the CPU gives 0.991, 0.947, 1.000, 0.994, 0.995, 0.999)
    confidences = [lab.confidence for lab in labels]
    assert confidences == pytest.approx([0.99, 0.95, 1.0, 0.99, 0.99, 1.0], abs=0.01)
    topics = [lab.main_domain for lab in labels]  # the best prototype inside the chosen domain
    assert topics == ["film", "music_genre", "tv_series", "music_awards", "sports", "politics"]


def test_agreement_confusion():
    labels = [
        DomainLabel(1, "A_film_tv", 1, "f"),
        DomainLabel(2, "other", 1, "o"),
        DomainLabel(3, "B_music", 1, "m"),
    ]
    ref = {
        1: {"ab_domain": "A_film_tv"},
        2: {"ab_domain": "B_music"},
        3: {"ab_domain": "B_music"},
        4: {"ab_domain": "A_film_tv"},
    }
    got = agreement(labels, ref)
    assert got["n"] == 3 and got["missing"] == 1 and got["accuracy"] == pytest.approx(0.6667)
    assert got["confusion"]["B_music"] == {"A_film_tv": 0, "B_music": 1, "other": 1}
