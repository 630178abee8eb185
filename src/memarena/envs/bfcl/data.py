"""The BFCL v3 multi-turn data shipped inside ``bfcl-eval``: questions, ground truth and the
function documents of the eight API classes.

Files (``bfcl_eval/data``): ``BFCL_v3_<category>.json`` (JSON lines: id, question = a list of
turns, each a list of messages; initial_config; involved_classes; path; miss_func adds
``missed_function`` = {turn index: [names]}), ``possible_answer/BFCL_v3_<category>.json`` (id,
ground_truth = one list of call strings per turn) and ``multi_turn_func_doc/<class file>.json``
(one function document per line).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.jsonl import read_jsonl

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
INSTALL_HINT = (
    "pip install --no-deps bfcl-eval==2025.8.6 mpmath (the last release with the v3 data; a full "
    "install pulls torch/CUDA and pins numpy)"
)


def package_dir() -> Path:
    """The installed ``bfcl_eval`` folder (a ConfigError with the install line when absent)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.origin:
        raise ConfigError(f"memarena: env=bfcl needs the bfcl-eval package; {INSTALL_HINT}.")
    return Path(spec.origin).parent


def _json_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(
            f"memarena: env=bfcl: {path} is missing; bfcl-eval releases after 2025.8.6 dropped "
            f"the v3 data; {INSTALL_HINT}."
        )
    return read_jsonl(path)


def function_docs(classes: list[str]) -> list[dict[str, Any]]:
    """Function documents of the given API classes, in class order."""
    from bfcl_eval.constants.category_mapping import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    root = package_dir() / "data" / "multi_turn_func_doc"
    docs: list[dict[str, Any]] = []
    for name in classes:
        docs.extend(_json_lines(root / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]))
    return docs


def _user_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m["content"]) for m in messages if m.get("role") == "user")


def load_category(category: str) -> list[dict[str, Any]]:
    """Every entry of a category as a plain record (what ``Task.payload`` holds).

    Keys: ``id``, ``category``, ``turns`` (user text per turn; "" for a miss_func turn whose
    message is the release of held-out functions), ``initial_config``, ``involved_classes``,
    ``functions`` (documents offered from the start), ``missed_functions`` ({turn index as str:
    documents released at that turn}), ``ground_truth`` (call strings per turn),
    ``long_context``.
    """
    data = package_dir() / "data"
    entries = _json_lines(data / f"BFCL_v3_{category}.json")
    answers = {
        a["id"]: a["ground_truth"]
        for a in _json_lines(data / "possible_answer" / f"BFCL_v3_{category}.json")
    }
    records = []
    for entry in entries:
        docs = function_docs(list(entry["involved_classes"]))
        missed: dict[str, list[dict[str, Any]]] = {}
        for turn, names in (entry.get("missed_function") or {}).items():
            missed[str(turn)] = [d for d in docs if d["name"] in names]
        held = {d["name"] for ds in missed.values() for d in ds}
        records.append(
            {
                "id": entry["id"],
                "category": category,
                "turns": [_user_text(t) for t in entry["question"]],
                "initial_config": entry["initial_config"],
                "involved_classes": list(entry["involved_classes"]),
                "functions": [d for d in docs if d["name"] not in held],
                "missed_functions": missed,
                "ground_truth": answers[entry["id"]],
                "long_context": "long_context" in category,
            }
        )
    return records


def index_of(entry_id: str) -> int:
    """``multi_turn_base_17`` -> 17."""
    return int(entry_id.rsplit("_", 1)[1])
