"""memarena's BFCL verdict against the package's own evaluator on all 200 multi_turn_base tasks.

The expert (the ground-truth calls of each turn, then NEXT) plays every task in memarena's
episode. Its executed calls are then delivered to bfcl-eval's ``multi_turn_runner`` the way a
harness hands them over:

- ``drop``: ReMe's released agent (``extract_multi_turn_responses``) collects each user turn's
  tool calls and leaves out a turn in which none was made;
- ``keep``: gorilla's own inference records every turn, an empty one as an empty list.

``multi_turn_runner`` lives in ``eval_runner.py``, whose imports pull every model handler's
SDK (not installed: bfcl-eval is installed without its dependencies), so the test compiles the
installed function's own source with the few names it uses. Each delivered item is one call
string (ReMe's shape); the handler passes it through, because memarena's expert sends the
ground truth's positional arguments that ReMe's keyword-only JSON calls never carry.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from needs import module_needs

from memarena.envs.bfcl import BfclEnv
from memarena.envs.bfcl.data import package_dir

_needs = module_needs("bfcl_eval")

CATEGORY = "multi_turn_base"
EMPTY_GROUND_TRUTH = {"multi_turn_base_167", "multi_turn_base_180"}
# the package's entry 154 has 5 user turns and 6 ground-truth turns: its runner fails it for
# every model (force_terminated), whichever turns are delivered
SIX_ANSWERS_FIVE_TURNS = {"multi_turn_base_154"}


class PassThrough:
    """The handler the runner decodes each delivered item with: one call string -> [call]."""

    def decode_execute(self, item: str) -> list[str]:
        return [item]


def official_runner():
    """bfcl-eval's ``multi_turn_runner``, compiled from the installed ``eval_runner.py``."""
    from bfcl_eval.constants.category_mapping import VERSION_PREFIX
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        is_empty_execute_response,
    )
    from bfcl_eval.utils import write_list_of_dicts_to_file

    path = package_dir() / "eval_checker" / "eval_runner.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (function,) = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "multi_turn_runner"
    ]
    names: dict[str, Any] = {
        "VERSION_PREFIX": VERSION_PREFIX,
        "multi_turn_checker": multi_turn_checker,
        "is_empty_execute_response": is_empty_execute_response,
        "write_list_of_dicts_to_file": write_list_of_dicts_to_file,
    }
    exec(compile(ast.Module([function], []), str(path), "exec"), names)
    return names["multi_turn_runner"]


def package_entries(name: str) -> dict[str, dict[str, Any]]:
    """The package's own lines of ``name`` (the prompts or the possible answers) by id."""
    root = package_dir() / "data"
    path = root / name if "/" in name else root / f"BFCL_v3_{CATEGORY}.json"
    with path.open(encoding="utf-8") as f:
        return {e["id"]: e for e in map(json.loads, filter(str.strip, f))}


def expert_calls(env: BfclEnv) -> dict[str, tuple[bool, list[list[list[str]]]]]:
    """Per entry id: memarena's verdict of the expert's episode and its executed calls."""
    out = {}
    for task in env.tasks("train") + env.tasks("test"):
        episode = env.open(task)
        episode.reset()
        try:
            while (action := episode.expert_action()) is not None:
                episode.step(action)
            out[episode.entry_id] = (episode.success, episode.calls)
        finally:
            episode.close()
    return out


def delivered(calls: list[list[list[str]]], empty_turns: str) -> list[list[str]]:
    """One list of call strings per turn, as the harness hands them to the runner."""
    turns = [[call for step in turn for call in step] for turn in calls]
    return [turn for turn in turns if turn] if empty_turns == "drop" else turns


def official_verdicts(replies: dict[str, list[list[str]]], tmp_path: Path) -> dict[str, bool]:
    """The runner's verdict per id (its score file lists every failed entry)."""
    prompts = package_entries("prompt")
    answers = package_entries(f"possible_answer/BFCL_v3_{CATEGORY}.json")
    ids = sorted(replies, key=lambda i: int(i.rsplit("_", 1)[1]))
    model = "memarena_official_check"
    accuracy, total = official_runner()(
        PassThrough(),
        [{"id": i, "result": replies[i]} for i in ids],
        [dict(prompts[i]) for i in ids],
        [answers[i] for i in ids],
        model,
        CATEGORY,
        tmp_path,
    )
    (score,) = (tmp_path / model).iterdir()
    header, *failed = (json.loads(line) for line in score.read_text().splitlines())
    failed_ids = {entry["id"] for entry in failed}
    assert total == len(ids) and header["correct_count"] == len(ids) - len(failed_ids)
    return {i: i not in failed_ids for i in ids}


@pytest.mark.parametrize("empty_turns", ["drop", "keep"])
def test_expert_verdicts_match_the_package_evaluator(empty_turns, tmp_path):
    env = BfclEnv(categories=[CATEGORY], empty_turns=empty_turns)
    played = expert_calls(env)
    assert len(played) == 200
    replies = {i: delivered(calls, empty_turns) for i, (_, calls) in played.items()}
    official = official_verdicts(replies, tmp_path)
    ours = {i: success for i, (success, _) in played.items()}
    assert ours == official
    failed = {i for i, ok in official.items() if not ok}
    # the two tasks with an empty ground-truth turn: ReMe's scoring drops the expert's empty
    # turn and the runner fails them as force-terminated; gorilla's inference passes them
    dropped = EMPTY_GROUND_TRUTH if empty_turns == "drop" else set()
    assert failed == dropped | SIX_ANSWERS_FIVE_TURNS


def test_dropped_empty_turn_is_force_terminated():
    env = BfclEnv(categories=[CATEGORY])
    (task,) = [t for t in env.tasks("test") + env.tasks("train") if t.id.endswith("_167")]
    episode = env.open(task)
    episode.reset()
    while (action := episode.expert_action()) is not None:
        episode.step(action)
    details = episode.details()
    episode.close()
    assert details["checker_valid"] is False
    assert details["checker_error_type"] == "multi_turn:force_terminated"
    assert details["turns_done"] == details["turns"] == 5
    assert episode.progress == 0.8  # the first four turns pass the checker
