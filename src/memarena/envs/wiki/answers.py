"""Answer normalization and exact match, as in the HotpotQA / FEVER evaluation scripts.

An answer is lowercased, stripped of punctuation and of the articles a / an / the, and its
whitespace collapsed; two answers match when their normalized forms are equal.
"""

from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


def normalize_answer(text: str) -> str:
    text = str(text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)
