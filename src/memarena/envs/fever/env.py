"""``FeverEnv``: FEVER fact verification as a ReAct Wikipedia task (EvoGraph-Mem, MemCo)."""

from __future__ import annotations

from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.fever import loader
from memarena.envs.fever.partition import read_claims
from memarena.envs.fever.prompts import (
    ACTION_FORMAT,
    FEWSHOT,
    RELEASED_FEWSHOT,
    RELEASED_SYSTEM,
    SYSTEM,
)
from memarena.envs.wiki.answers import FEVER_LABELS
from memarena.envs.wiki.backends import WikiBackend
from memarena.envs.wiki.env import WikiQAEnv


class FeverEnv(WikiQAEnv):
    """FEVER claims answered SUPPORTS / REFUTES / NOT ENOUGH INFO by searching Wikipedia.

    Args:
        wiki: the Wikipedia backend (``conf/env/wiki``).
        name: env name in task ids and results (default ``fever_<dataset>``, so smoke results
            never pass for the real benchmark).
        step_budget: steps per episode.
        dataset: ``smoke`` (the embedded synthetic set), ``official`` (a FEVER jsonl at
            ``path``; test = first ``num_test`` claims, train = ``train_path`` or the claims
            after them) or ``memco`` (MemCo's Film/TV vs Music partition, see ``partition_path``).
        path, train_path: official FEVER jsonl files.
        num_test, num_train: claims per split (null: all).
        partition: which shipped partition of ids ``dataset=memco`` uses: ``memco`` (MemCo's
            own Film/TV and Music lists: 100 + 100 train, 60 test with labels 27/18/15) or
            ``embedding`` (ours, made by ``scripts/prepare_fever_partition.py`` with the
            embedding labeller).
        partition_path: MemCo's ``data/fever/`` folder, or a partition file of ids; overrides
            ``partition``.
        fewshot: worked examples in the prompt (null: all three).
        search_sentences: sentences of a page's first paragraph shown by Search.
        require_data: stop unless a real dataset is chosen (paper experiments set it).
    """

    env = "fever"
    datasets = ("smoke", "official", "memco")
    needs_path = frozenset({"official"})
    file_hint = "an official FEVER jsonl (e.g. shared_task_dev.jsonl or G-Memory's fever_dev.jsonl)"
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
        partition: str = "memco",
        partition_path: str | None = None,
        fewshot: int | None = 3,
        search_sentences: int | str | None = 5,
        require_data: bool = False,
    ) -> None:
        super().__init__(
            wiki, name, step_budget, dataset, path, train_path, num_test, num_train, fewshot,
            search_sentences, require_data,
        )  # fmt: skip
        if partition not in loader.PACKAGED_PARTITIONS:
            raise ConfigError(
                f"memarena: env.partition={partition!r}; valid: {list(loader.PACKAGED_PARTITIONS)}."
            )
        self.partition = partition
        self.partition_path = partition_path

    def read_file(self, path: str) -> list[dict[str, Any]]:
        return read_claims(path)

    def smoke_records(self, split: str) -> list[dict[str, Any]]:
        return loader.smoke_records(split)

    def dataset_records(self) -> dict[str, list[dict[str, Any]]]:
        if self.dataset == "memco":
            return loader.memco_records(self.partition_path, self.path, self.partition)
        return super().dataset_records()

    def to_task(self, split: str, record: dict[str, Any]) -> Task:
        default_domain = "fever_smoke" if self.dataset == "smoke" else "fever"
        return loader.to_task(self.name, split, record, default_domain)

    def wrong_answers(self, task: Task) -> list[str]:
        return [label for label in FEVER_LABELS if label != task.payload["answer"]]
