"""``BfclEnv``: BFCL v3 multi-turn (``bfcl-eval==2025.8.6``) behind the Env protocol.

Categories: multi_turn_base, multi_turn_miss_func, multi_turn_miss_param,
multi_turn_long_context (200 tasks each). Domains are the categories. Split (``split``):

- ``reme``: ReMe's own ids (agentscope-ai/ReMe 26cb5ca6, ``benchmark/bfcl/default_ids.py``,
  shipped as ``reme_ids.json`` by ``scripts/reme_bfcl_ids.py``): train = its 50
  ``DEFAULT_TRAIN_IDS``, test = its 150 ``DEFAULT_VAL_IDS`` (the set its ``run_bfcl.py``
  evaluates). Other categories take the same entry indices;
- ``shuffled``: per category, the 200 entries shuffled with ``random.Random(seed)`` (the same
  permutation for every category, so one scenario stays on one side); the first ``n_train``
  are train, the rest test.

Reply length: ``max_tokens`` is the agent's reply cap (when ``protocol.max_tokens`` is null);
with ``thinking`` (the agent's backbone thinks, ``backbone.enable_thinking``) it is
``thinking_max_tokens``, so the reasoning is not cut before the calls it leads to.

Turn handling follows the package's handler: a reply that decodes into no calls ends the turn
(``text_ends_turn``), and more than ``turn_step_limit`` steps in one turn end the task (the
package's MAXIMUM_STEP_LIMIT=20 force quit). ``call_format`` picks the action format the prompt
asks for (Python call lists or Qwen/Hermes ``<tool_call>`` blocks); replies in either format
(or OpenAI-style JSON calls) are accepted whatever it is.

Scoring (``empty_turns``) follows the package's evaluator on the turns a harness delivers:
``drop`` (ReMe's released ``extract_multi_turn_responses``: a turn without calls is left out,
so a task with fewer delivered turns than ground-truth turns fails as force-terminated, even
where that turn's ground truth is empty: multi_turn_base 167 and 180 for a perfect agent) or
``keep`` (gorilla's own inference: every turn reached, an empty turn passes where the ground
truth is empty).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.tool_calls import bfcl_tools
from memarena.core.types import Task
from memarena.envs.bfcl.data import CATEGORIES, index_of, load_category
from memarena.envs.bfcl.episode import EMPTY_TURNS, BfclEpisode
from memarena.envs.bfcl.prompts import (
    ACTION_FORMATS,
    DOC_FORMATS,
    TOOLS_ACTION_FORMAT,
    TOOLS_SYSTEM,
    system_for,
)
from memarena.envs.options import check_step_budget, choose_names

SPLITS = ("train", "test")
SPLIT_KINDS = ("reme", "shuffled")
MAX_TOKENS = 256  # agent reply budget when protocol.max_tokens is null: call lists are long
# with thinking: gorilla ea13468 (the BFCL release ReMe pins) runs self-served Qwen3 with
# thinking at max_tokens=16384 (model_handler/api_inference/qwen.py, its Qwen-Agent thinking
# handler); ReMe's own agent sets no limit (bfcl_agent.py call_llm: the server's default)
THINKING_MAX_TOKENS = 16384
CALL_FORMATS = tuple(ACTION_FORMATS)
REME_IDS = Path(__file__).with_name("reme_ids.json")


@cache
def reme_ids() -> dict[str, tuple[str, ...]]:
    """ReMe's ids: ``{"train": (...50), "test": (...150)}`` (multi_turn_base entry ids)."""
    data = json.loads(REME_IDS.read_text(encoding="utf-8"))
    return {split: tuple(data[split]) for split in SPLITS}


class BfclEnv(Env):
    """BFCL v3 multi-turn behind the :class:`~memarena.core.env.Env` contract.

    Args:
        name: env name in task ids and results.
        step_budget: steps per episode over all turns (NEXT counts as a step).
        categories: multi-turn categories to draw tasks from.
        split: ``reme`` (ReMe's 50 train / 150 val ids) or ``shuffled`` (seeded shuffle).
        n_train: train tasks per category under ``split=shuffled`` (the rest of its 200 are
            test); ``split=reme`` fixes 50 and refuses another number.
        seed: seed of the shuffle (``split=shuffled``).
        text_ends_turn: a reply that decodes into no calls ends the turn (the package's
            behaviour); False makes it an invalid action.
        turn_step_limit: the task ends once the steps within one turn exceed this (the
            package's 20); None for no limit.
        call_format: the action format the prompt asks for, ``python`` or ``tool_call``.
        doc_format: function documents as the package's ``json`` or ``compact`` signatures.
        empty_turns: which turns the verdict receives, ``drop`` (ReMe's released scoring: a
            turn without calls is left out) or ``keep`` (gorilla's inference: all reached).
        require_data: accepted for paper experiments; always met (the package ships the data).
        thinking: the agent's backbone thinks (Qwen3 ``enable_thinking``); only picks the
            reply cap. None counts as False.
        max_tokens: the agent's reply cap without thinking.
        thinking_max_tokens: the agent's reply cap with thinking.
    """

    def __init__(
        self,
        name: str = "bfcl",
        step_budget: int = 30,
        categories: Sequence[str] | str = ("multi_turn_base",),
        split: str = "reme",
        n_train: int = 50,
        seed: int = 0,
        text_ends_turn: bool = True,
        turn_step_limit: int | None = 20,
        call_format: str = "python",
        doc_format: str = "json",
        empty_turns: str = "drop",
        require_data: bool = False,
        thinking: bool | None = False,
        max_tokens: int = MAX_TOKENS,
        thinking_max_tokens: int = THINKING_MAX_TOKENS,
    ) -> None:
        self.step_budget = check_step_budget(step_budget)
        caps = {"max_tokens": max_tokens, "thinking_max_tokens": thinking_max_tokens}
        for key, value in caps.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"memarena: env.{key}={value!r} must be an int >= 1.")
        if thinking is not None and not isinstance(thinking, bool):
            raise ConfigError(f"memarena: env.thinking={thinking!r} must be true, false or null.")
        self.thinking = bool(thinking)
        self.max_tokens = thinking_max_tokens if self.thinking else max_tokens
        self.name = str(name)
        self.categories = choose_names("categories", categories, CATEGORIES)
        if split not in SPLIT_KINDS:
            raise ConfigError(
                f"memarena: env.split={split!r} is not valid; valid: {list(SPLIT_KINDS)} (reme: "
                "ReMe's 50 train / 150 val ids; shuffled: a seeded shuffle cut at env.n_train)."
            )
        self.split = str(split)
        if not isinstance(n_train, int) or isinstance(n_train, bool) or n_train < 0:
            raise ConfigError(f"memarena: env.n_train={n_train!r} must be an int >= 0.")
        if self.split == "reme" and n_train != len(reme_ids()["train"]):
            raise ConfigError(
                f"memarena: env.n_train={n_train} needs env.split=shuffled; env.split=reme "
                f"runs ReMe's fixed {len(reme_ids()['train'])} train / "
                f"{len(reme_ids()['test'])} test tasks."
            )
        self.n_train = n_train
        self.seed = int(seed)
        if not isinstance(text_ends_turn, bool):
            raise ConfigError(
                f"memarena: env.text_ends_turn={text_ends_turn!r} must be true or false."
            )
        self.text_ends_turn = text_ends_turn
        if turn_step_limit is not None and (
            not isinstance(turn_step_limit, int)
            or isinstance(turn_step_limit, bool)
            or turn_step_limit < 1
        ):
            raise ConfigError(
                f"memarena: env.turn_step_limit={turn_step_limit!r} must be an int >= 1 or "
                "null (no limit)."
            )
        self.turn_step_limit = turn_step_limit
        if call_format not in CALL_FORMATS:
            raise ConfigError(
                f"memarena: env.call_format={call_format!r} is not valid; valid: "
                f"{list(CALL_FORMATS)}."
            )
        self.call_format = str(call_format)
        if doc_format not in DOC_FORMATS:
            raise ConfigError(
                f"memarena: env.doc_format={doc_format!r} is not valid; valid: {list(DOC_FORMATS)}."
            )
        self.doc_format = str(doc_format)
        if empty_turns not in EMPTY_TURNS:
            raise ConfigError(
                f"memarena: env.empty_turns={empty_turns!r} is not valid; valid: "
                f"{list(EMPTY_TURNS)} (drop: ReMe's released scoring leaves out turns without "
                "calls; keep: gorilla's inference keeps every turn)."
            )
        self.empty_turns = str(empty_turns)
        self._tasks: dict[str, list[Task]] = {}

    def _split(self, category: str) -> dict[str, list[dict[str, Any]]]:
        records = sorted(load_category(category), key=lambda r: index_of(r["id"]))
        if self.split == "reme":  # ReMe's multi_turn_base ids, as entry indices
            out: dict[str, list[dict[str, Any]]] = {}
            for part, ids in reme_ids().items():
                wanted = {index_of(i) for i in ids}
                out[part] = [r for r in records if index_of(r["id"]) in wanted]
            return out
        if self.n_train > len(records):
            raise ConfigError(
                f"memarena: env.n_train={self.n_train} exceeds the {len(records)} tasks of "
                f"{category}."
            )
        order = list(range(len(records)))
        random.Random(self.seed).shuffle(order)
        train = sorted(order[: self.n_train])
        test = sorted(order[self.n_train :])
        return {"train": [records[i] for i in train], "test": [records[i] for i in test]}

    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env=bfcl has no split {split!r}; valid splits: {list(SPLITS)} "
                "(protocol.train_split / protocol.eval_split)."
            )
        if not self._tasks:
            for category in self.categories:
                for part, records in self._split(category).items():
                    self._tasks.setdefault(part, []).extend(self._task(part, r) for r in records)
        return list(self._tasks.get(split, []))

    def _task(self, split: str, record: dict[str, Any]) -> Task:
        # the first request only: later turns arrive as observations, one at a time
        goal = next((f"User: {t}" for t in record["turns"] if t), "User: (no request)")
        return Task(
            f"{self.name}/{record['category']}/{split}/{record['id']}",
            self.name,
            split,
            record["category"],
            goal,
            dict(record),
        )

    def first_request(self, task: Task) -> str:
        """The first user message of the task's entry (ReMe's agent sends and retrieves with
        exactly this text: bfcl_agent.py, history[0]["content"]), without the ``User: `` label
        of memarena's goal."""
        turns = task.payload.get("turns") or []
        return next((t for t in turns if t), "(no request)")

    def domains(self) -> list[str]:
        return list(self.categories)

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        docs = task.payload.get("functions", []) if task is not None else []
        return EnvPrompt(
            system=system_for(docs, self.doc_format),
            action_format=ACTION_FORMATS[self.call_format],
            tools=bfcl_tools(docs) if docs else None,
            tools_system=TOOLS_SYSTEM,
            tools_action_format=TOOLS_ACTION_FORMAT,
        )

    def open(self, task: Task) -> BfclEpisode:
        if task.payload.get("category") not in CATEGORIES:
            raise ConfigError(f"memarena: task {task.id} is not a BFCL multi-turn task.")
        return BfclEpisode(
            task,
            self.step_budget,
            text_ends_turn=self.text_ends_turn,
            turn_step_limit=self.turn_step_limit,
            call_format=self.call_format,
            doc_format=self.doc_format,
            empty_turns=self.empty_turns,
        )

    def close(self) -> None:
        """Nothing to release: each episode drops its own API instances."""
