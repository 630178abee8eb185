"""``HotpotQAEnv``: HotpotQA multi-hop questions as a ReAct Wikipedia task (EvoGraph-Mem)."""

from __future__ import annotations

from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.hotpotqa import loader
from memarena.envs.hotpotqa.prompts import (
    ACTION_FORMAT,
    FEWSHOT,
    RELEASED_FEWSHOT,
    RELEASED_SYSTEM,
    SYSTEM,
)
from memarena.envs.wiki.answers import normalize_answer
from memarena.envs.wiki.backends import WikiBackend
from memarena.envs.wiki.env import WikiQAEnv

PARTITIONS = ("type", "none")


class HotpotQAEnv(WikiQAEnv):
    """HotpotQA questions answered by searching Wikipedia; exact match after normalization.

    Args:
        wiki: the Wikipedia backend. ``context`` (the default) is the distractor setting: each
            question's own ten paragraphs; ``fullwiki`` needs ``local``, ``live`` or ``replay``.
        name: env name in task ids and results (default ``hotpotqa_<dataset>``, so smoke results
            never pass for the real benchmark).
        step_budget: steps per episode.
        dataset: ``smoke`` (embedded synthetic set), ``distractor`` or ``fullwiki`` (an
            official file at ``path``; test = first ``num_test`` questions, train =
            ``train_path`` or the questions after them).
        partition: domains by question ``type`` (bridge / comparison) or ``none``.
        fewshot: worked examples in the prompt (null: both).
    """

    env = "hotpotqa"
    datasets = ("smoke", "distractor", "fullwiki")
    needs_path = frozenset({"distractor", "fullwiki"})
    file_hint = "an official HotpotQA json (e.g. hotpot_dev_distractor_v1.json)"
    system = SYSTEM
    action_format = ACTION_FORMAT
    fewshot_examples = FEWSHOT
    released_system = RELEASED_SYSTEM
    released_fewshot = RELEASED_FEWSHOT

    def __init__(
        self,
        wiki: WikiBackend,
        name: str | None = None,
        step_budget: int = 7,
        dataset: str = "smoke",
        path: str | None = None,
        train_path: str | None = None,
        num_test: int | None = 100,
        num_train: int | None = 100,
        partition: str = "type",
        fewshot: int | None = 2,
        search_sentences: int | str | None = 5,
        require_data: bool = False,
    ) -> None:
        super().__init__(
            wiki, name, step_budget, dataset, path, train_path, num_test, num_train, fewshot,
            search_sentences, require_data,
        )  # fmt: skip
        if partition not in PARTITIONS:
            raise ConfigError(f"memarena: env.partition={partition!r}; valid: {list(PARTITIONS)}.")
        if dataset == "fullwiki" and wiki.name == "context":
            raise ConfigError(
                "memarena: env.dataset=fullwiki searches all of Wikipedia, but env/wiki=context "
                "is the distractor setting (each question's own paragraphs). Choose env/wiki=local "
                "(with env.wiki.path), live or replay."
            )
        self.partition = partition

    def read_file(self, path: str) -> list[dict[str, Any]]:
        return loader.read_hotpotqa(path)

    def smoke_records(self, split: str) -> list[dict[str, Any]]:
        return loader.smoke_records(split)

    def to_task(self, split: str, record: dict[str, Any]) -> Task:
        return loader.to_task(self.name, split, record, self.partition)

    def wrong_answers(self, task: Task) -> list[str]:
        answer = normalize_answer(task.payload["answer"])
        if answer in ("yes", "no"):
            return ["no" if answer == "yes" else "yes"]
        titles = [str(t) for t, _ in task.payload.get("context", [])]
        wrong = [t for t in titles if normalize_answer(t) != answer][:2]
        return wrong or ["unknown"]
