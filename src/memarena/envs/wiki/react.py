"""One ReAct Wikipedia episode: ``Search[entity]``, ``Lookup[keyword]``, ``Finish[answer]``.

Observations follow ReAct's Wikipedia environment:

- ``Search[x]`` on a page: its first paragraph (at most ``search_sentences`` sentences), or
  with ``search_sentences="lead"`` its whole lead section (G-Memory's tool); on a
  miss: ``Could not find x. Similar: ['A', 'B', ...].`` (up to five titles).
- ``Lookup[k]``: the next sentence of the open page containing ``k`` (case-insensitive) as
  ``(Result i / n) sentence``; then ``No more results.``. A new keyword restarts the list.
- ``Finish[a]``: ends the episode; success is exact match after normalization
  (:mod:`memarena.envs.wiki.answers`). ``Think[...]`` is accepted and changes nothing, and so
  is a thought line (``Thought 2: ...``, the released ReAct format's), answered ``OK.``.
- Anything else: ``Invalid action: <text>``.

Feedback (for MemCo's evidence): a found page, a lookup hit or a finish changes the state; a
search miss is ``not_found``, an exhausted lookup ``no_more_results``, a wrong answer
``wrong_answer``, an unparsable action ``invalid_action``.

Progress counts subgoals as AgentBoard does: opening each gold evidence page, and the correct
answer; a correct finish gives 1. The expert searches the gold pages not yet opened, in order,
then finishes with the gold answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.wiki.backends import SearchResult, WikiBackend, title_key

ACTION_RE = re.compile(r"\b(search|lookup|finish|think)\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
NO_MORE = "No more results."
START = "No page is open yet."
THOUGHT_RE = re.compile(r"^\s*thought\b", re.IGNORECASE)


def parse_react_action(text: str) -> tuple[str, str] | None:
    """``("search", "Foo")`` from ``"Search[Foo]"`` (the first such call in the text)."""
    match = ACTION_RE.search(str(text))
    if match is None:
        return None
    return match.group(1).lower(), " ".join(match.group(2).split())


def page_sentences(text: str) -> list[str]:
    """Sentences of a page as ReAct splits them: paragraphs by newline, sentences by '. '."""
    out: list[str] = []
    for paragraph in text.split("\n"):
        for sentence in paragraph.strip().split(". "):
            sentence = sentence.strip()
            if sentence:
                out.append(sentence if sentence.endswith(".") else sentence + ".")
    return out


LEAD = "lead"  # search_sentences: the page's whole lead section


def search_observation(result: SearchResult, max_sentences: int | str | None) -> str:
    """What ``Search`` shows of a page: its first paragraph's first ``max_sentences``
    sentences (None: all of them) or, with ``"lead"``, the whole lead section as the page
    gives it (every paragraph before the first blank line, uncut: G-Memory's Wikipedia tool)."""
    if not result.found:
        return f"Could not find {result.query}. Similar: {result.similar[:5]}."
    if max_sentences == LEAD:
        return result.text.split("\n\n", 1)[0].strip()
    first = page_sentences(result.text.split("\n", 1)[0])
    return " ".join(first[:max_sentences] if max_sentences else first)


def is_thought(action: str) -> bool:
    """A ReAct thought line (``Thought 2: ...``, ``Thought: ...``): the released loop's agent
    writes them as steps of their own, answered ``OK.``."""
    return bool(THOUGHT_RE.match(str(action)))


class WikiEpisode(Episode):
    """A question or claim answered by searching a :class:`WikiBackend`.

    Args:
        task: the task; ``payload`` holds ``answer`` and ``gold_titles``.
        wiki: the backend bound to this task.
        check: ``check(prediction, gold) -> bool`` (exact match after normalization).
        wrong_answers: plausible wrong answers, for ``noise_actions`` (the scripted noise).
        search_sentences: sentences of the first paragraph shown by ``Search`` (None: all).
    """

    def __init__(
        self,
        task: Task,
        wiki: WikiBackend,
        check: Callable[[str, str], bool],
        wrong_answers: list[str],
        search_sentences: int | str | None = 5,
    ) -> None:
        self.task = task
        self.wiki = wiki
        self.check = check
        self.wrong_answers = wrong_answers
        self.search_sentences = search_sentences
        self.answer = str(task.payload["answer"])
        self.gold_titles = [str(t) for t in task.payload.get("gold_titles", [])]
        self._opened: set[str] = set()
        self._page: SearchResult | None = None
        self._lookup_key: str | None = None
        self._lookup_hits: list[str] = []
        self._lookup_index = 0
        self.done = False
        self.success = False

    # -- Episode protocol --------------------------------------------------------------------
    def reset(self) -> Observation:
        return Observation(START, self.task.goal, None, {"page": None})

    def step(self, action: str) -> StepResult:
        if self.done:
            return self._result("The episode is over.", Feedback(False, False, "episode_over"))
        if is_thought(action):  # a thought step (the released ReAct format): nothing changes
            return self._result("OK.", Feedback(True, False, None))
        parsed = parse_react_action(action)
        if parsed is None or (parsed[0] in ("search", "lookup") and not parsed[1]):
            text = f"Invalid action: {action}"
            return self._result(text, Feedback(False, False, "invalid_action"))
        verb, arg = parsed
        if verb == "search":
            return self._search(arg)
        if verb == "lookup":
            return self._lookup(arg)
        if verb == "think":
            return self._result("OK.", Feedback(True, False, None))
        self.done = True
        self.success = self.check(arg, self.answer)
        text = f"Episode finished, reward = {int(self.success)}"
        return self._result(text, Feedback(True, True, None if self.success else "wrong_answer"))

    def expert_action(self) -> str | None:
        if self.done:
            return None
        for title in self.gold_titles:
            if title_key(title) not in self._opened:
                return f"Search[{title}]"
        return f"Finish[{self.answer}]"

    def noise_actions(self) -> list[str]:
        """Plausible wrong actions for the expert policy's epsilon noise (backbone=scripted)."""
        words = [w.strip(".,?!'\"") for w in self.task.goal.split()]
        names = [w for w in words if w[:1].isupper()] or [w for w in words if w]
        out = [f"Finish[{a}]" for a in self.wrong_answers]
        out += [f"Search[{n}]" for n in dict.fromkeys(names[-3:])]
        return out + [f"Lookup[{n}]" for n in names[:1]]

    def close(self) -> None:
        """Nothing to release: the backend belongs to the env."""

    # -- actions -----------------------------------------------------------------------------
    def _search(self, query: str) -> StepResult:
        result = self.wiki.search(query)
        self._lookup_key, self._lookup_hits, self._lookup_index = None, [], 0
        if not result.found:
            return self._result(
                search_observation(result, self.search_sentences),
                Feedback(True, False, "not_found"),
            )
        self._page = result
        self._opened.add(title_key(result.title))
        return self._result(
            search_observation(result, self.search_sentences), Feedback(True, True, None)
        )

    def _lookup(self, keyword: str) -> StepResult:
        if keyword.lower() != self._lookup_key:
            self._lookup_key = keyword.lower()
            sentences = page_sentences(self._page.text) if self._page else []
            self._lookup_hits = [s for s in sentences if self._lookup_key in s.lower()]
            self._lookup_index = 0
        if self._lookup_index >= len(self._lookup_hits):
            return self._result(NO_MORE, Feedback(True, False, "no_more_results"))
        i = self._lookup_index
        self._lookup_index += 1
        text = f"(Result {i + 1} / {len(self._lookup_hits)}) {self._lookup_hits[i]}"
        return self._result(text, Feedback(True, True, None))

    # -- bookkeeping -------------------------------------------------------------------------
    def progress(self) -> float:
        if self.success:
            return 1.0
        opened = sum(title_key(t) in self._opened for t in self.gold_titles)
        return opened / (len(self.gold_titles) + 1)

    def _result(self, text: str, feedback: Feedback) -> StepResult:
        info = {"page": self._page.title if self._page else None}
        return StepResult(
            observation=Observation(text, self.task.goal, None, info),
            reward=float(self.success),
            done=self.done,
            success=self.success,
            progress=self.progress(),
            feedback=feedback,
        )
