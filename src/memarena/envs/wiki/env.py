"""``WikiQAEnv``: what FEVER and HotpotQA share — a dataset of questions or claims, a Wikipedia
backend, ReAct's Search/Lookup/Finish episode, the split rule and the prompt.

Splits: ``test`` is the first ``num_test`` records of the dataset file (the G-Memory / MemCo
FEVER runs read the first 100 claims); ``train`` is the first ``num_train`` records of
``train_path`` or, without one, the ``num_train`` records that follow the test ones in the same
file (disjoint from test). A dataset may define its own splits (MemCo's FEVER partition, the
smoke sets' train/test files).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memarena.core.env import Env, EnvPrompt
from memarena.core.errors import ConfigError
from memarena.core.types import Task
from memarena.envs.options import check_official_data, check_step_budget
from memarena.envs.wiki.answers import exact_match
from memarena.envs.wiki.backends import WikiBackend
from memarena.envs.wiki.react import LEAD, WikiEpisode

log = logging.getLogger(__name__)

SPLITS = ("train", "test")
SMOKE_WIKI = "smoke"


def split_records(
    test_records: list[Any],
    train_records: list[Any] | None,
    num_test: int | None,
    num_train: int | None,
) -> dict[str, list[Any]]:
    """The module's split rule: test = first ``num_test``; train = first ``num_train`` of the
    train file, or the next ``num_train`` after the test records in the same file."""
    test = test_records[:num_test] if num_test is not None else list(test_records)
    if train_records is None:
        rest = test_records[len(test) :]
        train = rest[:num_train] if num_train is not None else rest
    else:
        train = train_records[:num_train] if num_train is not None else list(train_records)
    return {"test": test, "train": train}


def check_count(key: str, value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"memarena: env.{key}={value!r} must be an int >= 0 or null (all).")
    return value


class WikiQAEnv(Env):
    """Base of the ReAct Wikipedia benchmarks; subclasses read records and supply prompts.

    Subclasses set ``env``, ``datasets`` (``smoke`` first), ``needs_path`` (datasets read from
    ``path``), ``file_hint``, the prompt pieces, and implement ``read_file``, ``smoke_records``,
    ``to_task`` and ``wrong_answers``. Each task's ``payload`` holds ``answer`` and
    ``gold_titles`` (display titles of the gold pages).
    """

    env: str = ""
    datasets: tuple[str, ...] = ("smoke",)
    needs_path: frozenset[str] = frozenset()
    file_hint: str = ""
    system: str = ""
    action_format: str = ""
    fewshot_examples: tuple[str, ...] = ()
    # the released agent loop's instructions and examples (ReAct thoughts); empty: the above
    released_system: str = ""
    released_fewshot: tuple[str, ...] = ()
    check: Callable[[str, str], bool] = staticmethod(exact_match)

    def __init__(
        self,
        wiki: WikiBackend,
        name: str | None,
        step_budget: Any,
        dataset: str,
        path: str | None,
        train_path: str | None,
        num_test: int | None,
        num_train: int | None,
        fewshot: int | None,
        search_sentences: int | str | None,
        require_data: bool = False,
    ) -> None:
        self.step_budget = check_step_budget(step_budget)
        self.stand_in = check_official_data(
            bool(require_data), dataset != "smoke", self.env,
            f"choose env.dataset ({', '.join(d for d in self.datasets if d != 'smoke')}) and "
            "a real Wikipedia (env/wiki=live, local or replay)", f"{self.env}_smoke",
        )  # fmt: skip
        if dataset not in self.datasets:
            raise ConfigError(f"memarena: env.dataset={dataset!r}; valid: {list(self.datasets)}.")
        if dataset in self.needs_path and not path:
            raise ConfigError(f"memarena: env.dataset={dataset} needs env.path, {self.file_hint}.")
        if not isinstance(wiki, WikiBackend):
            raise ConfigError(
                f"memarena: env.wiki must be a Wikipedia backend config (env/wiki=smoke, local, "
                f"live, replay or context), got {type(wiki).__name__}."
            )
        if dataset != "smoke" and wiki.name == SMOKE_WIKI:
            raise ConfigError(
                f"memarena: env.dataset={dataset} needs a real Wikipedia, but env/wiki=smoke is "
                "the synthetic smoke encyclopedia. Choose env/wiki=live (internet), local (with "
                "env.wiki.path, e.g. FEVER's wiki-pages dump) or replay (a recorded cache)."
            )
        if dataset == "smoke" and wiki.name in ("live", "replay"):
            log.warning(
                "env.dataset=smoke is fiction written for memarena: its pages exist only in the "
                "embedded encyclopedia (env/wiki=smoke), not on Wikipedia."
            )
        fewshot_n = check_count("fewshot", fewshot)
        self.search_sentences = (
            LEAD if search_sentences == LEAD else check_count("search_sentences", search_sentences)
        )
        self.name = str(name or f"{self.env}_{dataset}")
        self.wiki = wiki
        self.dataset = dataset
        self.path, self.train_path = path, train_path
        self.num_test = check_count("num_test", num_test)
        self.num_train = check_count("num_train", num_train)
        self.fewshot = fewshot_n  # examples shown by default (None: all that ship)
        self._records: dict[str, list[dict[str, Any]]] | None = None
        # split -> {asked, available}: a split the file holds fewer records for than
        # env.num_<split> asks (warned once; runs are flagged ``short_split``)
        self.short_splits: dict[str, dict[str, int]] = {}
        self._tasks: dict[str, list[Task]] = {}

    # -- to implement --------------------------------------------------------------------------
    def read_file(self, path: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def smoke_records(self, split: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def to_task(self, split: str, record: dict[str, Any]) -> Task:
        raise NotImplementedError

    def wrong_answers(self, task: Task) -> list[str]:
        raise NotImplementedError

    def dataset_records(self) -> dict[str, list[dict[str, Any]]]:
        """Records per split: the smoke files, or the split rule on ``path``/``train_path``."""
        if self.dataset == "smoke":
            return {split: self.smoke_records(split) for split in SPLITS}
        records = split_records(
            self.read_file(str(self.path)),
            self.read_file(self.train_path) if self.train_path else None,
            self.num_test,
            self.num_train,
        )
        for split, asked in (("test", self.num_test), ("train", self.num_train)):
            if asked is not None and len(records[split]) < asked:
                self.short_splits[split] = {"asked": asked, "available": len(records[split])}
                where = self.train_path if split == "train" and self.train_path else self.path
                log.warning(
                    "memarena: env.num_%s=%d but %s holds only %d %s records for the %s split "
                    "(after the split rule); the run uses those %d (flagged short_split). Give a "
                    "larger file or set env.num_%s=%d (or null: all).",
                    split, asked, where, len(records[split]), self.env, split,
                    len(records[split]), split, len(records[split]),
                )  # fmt: skip
        return records

    # -- Env protocol --------------------------------------------------------------------------
    def tasks(self, split: str) -> list[Task]:
        if split not in SPLITS:
            raise ConfigError(
                f"memarena: env={self.name} has no split {split!r}; valid splits: {list(SPLITS)} "
                "(protocol.train_split / protocol.eval_split)."
            )
        if split not in self._tasks:
            if self._records is None:
                self._records = self.dataset_records()
            self._tasks[split] = [self.to_task(split, r) for r in self._records[split]]
            log.info("%s %s: %d tasks", self.name, split, len(self._tasks[split]))
        return list(self._tasks[split])

    def domains(self) -> list[str]:
        seen = [t.domain for split in SPLITS for t in self.tasks(split)]
        return list(dict.fromkeys(seen))

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        released = None
        if self.released_system:
            released = EnvPrompt(
                system=self.released_system,
                action_format="",
                fewshot=list(self.released_fewshot),
                shown=self.fewshot,
            )
        return EnvPrompt(
            system=self.system,
            action_format=self.action_format,
            fewshot=list(self.fewshot_examples),
            shown=self.fewshot,
            released=released,
        )

    def open(self, task: Task) -> WikiEpisode:
        if "answer" not in task.payload:
            raise ConfigError(f"memarena: task {task.id} is not a {self.name} task.")
        return WikiEpisode(
            task,
            self.wiki.bind(task),
            check=self.check,
            wrong_answers=self.wrong_answers(task),
            search_sentences=self.search_sentences,
        )

    def close(self) -> None:
        self.wiki.close()
