"""Per-benchmark task roles for MemCo's role-level abstraction (paper Section 3.4, B.3.1).

A :class:`~memarena.memory.memco.base.RoleAdapter` names the functional entities of a task
(``object``, ``destination``, ``tool``, ``subject`` ...) from the goal and the task payload.
Abstraction writes a role entity as ``<role>``, drops instance ids and scene anchors
(``countertop 2`` -> ``countertop``, ``ball3`` -> ``ball`` in PDDL) and keeps any other entity
as an applicability constraint. Binding reverses it under the current task's roles.

Role mapping per env:

- ``alfworld``: ``object`` (``pddl_params.object_target``), ``destination``
  (``parent_target``), ``container`` (``mrecep_target``), ``lamp`` (``toggle_target``), ``tool``
  (sinkbasin / microwave / fridge for clean / heat / cool tasks); the goal text is the fallback.
- ``scienceworld``: ``object`` (the substance / thing the task names), ``tool`` (a thermometer
  the task names), ``destination`` (the first "place it in the X" / "move it to the X").
- ``pddl``: per goal atom in order, its first argument is ``object`` (``object2`` ...), its last
  ``destination`` (``destination2`` ...); other objects lose their trailing digits.
- ``fever`` / ``hotpotqa``: the capitalised entity spans of the claim / question are
  ``subject``, ``subject2`` ...; a ``Search`` of any other title is ``Search[<bridge>]``;
  FEVER keeps its ``Finish`` label, a HotpotQA answer that is not a subject is ``<answer>``.
- anything else: no roles; instance ids are still dropped.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import methodcaller

from memarena.core.types import Task

ROLE = re.compile(r"<([a-z][a-z0-9_]*)>")
_SPACES = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s")
# The replacement ``\1`` as a function: a template string is re-parsed on every ``sub`` call.
_GROUP1 = methodcaller("group", 1)


def _norm(text: str) -> str:
    # ``str.split()`` splits on exactly the whitespace ``\s`` matches (``str.isspace``), so
    # this equals ``re.sub(r"\s+", " ", text.strip().lower()).strip(" .")``, about 3x faster.
    return " ".join(str(text).lower().split()).strip(" .")


def _first_sentence(text: str, max_words: int = 12) -> str:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not re.match(r"\s*(task:|your task is|-=)", ln, re.I)]
    if not lines:
        return ""
    sentence = _SENTENCE.split(lines[0].strip(), maxsplit=1)[0]
    return " ".join(_norm(sentence).split()[:max_words])


class GenericAdapter:
    """Roles replaced by ``<role>``; any ``word <digits>`` instance id dropped."""

    env = "generic"
    # The id that follows an entity kind in this env's action strings.
    id_suffix = r"(?: \d+)?"
    # ``word <digits>`` instance ids, dropped by :meth:`strip_ids`.
    _IDS = re.compile(r"\b([a-z][a-z\-]*) \d+\b")

    def roles(self, task: Task) -> dict[str, str]:
        return {}

    def state_cue(self, observation: str) -> str:
        return _first_sentence(re.sub(r"\b([a-z][a-z\-]*) \d+\b", r"\1", str(observation).lower()))

    def strip_ids(self, text: str) -> str:
        return self._IDS.sub(_GROUP1, text)

    def abstract_text(self, text: str, roles: dict[str, str]) -> str:
        """Role entities (longest first) replaced by ``<role>``, then instance ids dropped.

        The per-roles patterns are compiled once (:func:`_role_patterns`); a role whose entity
        does not occur in the text is skipped without running its regex (the pattern starts
        with the literal entity, so it could not match)."""
        out = _norm(text)
        for entity, pattern, tag in _role_patterns(self.id_suffix, tuple(roles.items())):
            if entity in out:
                out = pattern.sub(tag, out)
        return self.strip_ids(out)

    def abstract_action(self, action: str, roles: dict[str, str]) -> str | None:
        return self.abstract_text(action, roles) or None

    def fill(self, abstract: str, roles: dict[str, str]) -> str | None:
        """Placeholders replaced by the role entities; None when a role is not in ``roles``."""
        missing = [r for r in ROLE.findall(abstract) if not roles.get(r)]
        if missing:
            return None
        return ROLE.sub(lambda m: roles[m.group(1)], abstract)

    def pattern(self, abstract: str, roles: dict[str, str]) -> re.Pattern | None:
        """A regex matching the concrete actions whose abstraction is ``abstract`` (cached)."""
        return _pattern(self, abstract, tuple(sorted(roles.items())))

    def _pattern(self, abstract: str, roles: dict[str, str]) -> re.Pattern | None:
        parts = []
        for token in abstract.split():
            pieces = re.split(r"(<[a-z][a-z0-9_]*>)", token)
            out = ""
            for piece in pieces:
                role = ROLE.fullmatch(piece)
                if role and not roles.get(role.group(1)):
                    return None
                text = _norm(roles[role.group(1)]) if role else piece
                out += re.escape(text) + (self.id_suffix if text else "")
            parts.append(out)
        return re.compile(r"\s+".join(parts), re.IGNORECASE)

    def bind_action(
        self, abstract: str, roles: dict[str, str], admissible: list[str] | None
    ) -> str | None:
        if admissible is None:
            return self.fill(abstract, roles)
        key = tuple(sorted(roles.items()))
        return next((a for a in admissible if bound_abstract(self, a, key) == abstract), None)


@lru_cache(maxsize=65536)
def _role_patterns(
    id_suffix: str, roles: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, re.Pattern, str], ...]:
    """``(normalized entity, pattern, "<role>")`` per non-empty role entity, in substitution
    order (longest entity first, then role name): what :meth:`GenericAdapter.abstract_text`
    applies."""
    out = []
    for role, entity in sorted(roles, key=lambda kv: (-len(kv[1]), kv[0])):
        if entity:
            norm = _norm(entity)
            pattern = re.compile(rf"(?<![\w<]){re.escape(norm)}{id_suffix}(?![\w>])")
            out.append((norm, pattern, f"<{role}>"))
    return tuple(out)


@lru_cache(maxsize=65536)
def _pattern(
    adapter: GenericAdapter, abstract: str, roles: tuple[tuple[str, str], ...]
) -> re.Pattern | None:
    return adapter._pattern(abstract, dict(roles))


@lru_cache(maxsize=65536)
def abstract_cached(
    adapter: GenericAdapter, action: str, roles: tuple[tuple[str, str], ...]
) -> str | None:
    """``adapter.abstract_action(action, roles)``, cached (the same actions recur every step)."""
    return adapter.abstract_action(action, dict(roles))


@lru_cache(maxsize=65536)
def bound_abstract(
    adapter: GenericAdapter, action: str, roles: tuple[tuple[str, str], ...]
) -> str | None:
    """The abstract action that the concrete ``action`` binds to under ``roles``: its
    abstraction, when that abstraction's role pattern matches ``action`` back; else None.
    :meth:`GenericAdapter.bind_action` returns the first admissible action bound to the abstract
    action asked for (cached: the same admissible actions recur every step)."""
    abstract = abstract_cached(adapter, action, roles)
    if not abstract:
        return None
    pattern = adapter.pattern(abstract, dict(roles))
    return abstract if pattern is not None and pattern.fullmatch(_norm(action)) else None


class AlfWorldAdapter(GenericAdapter):
    env = "alfworld"
    TOOLS = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
    _GOAL = re.compile(
        r"(?:put|place|clean|heat|cool|look at|examine)\s+(?:a |an |some |two |the )?"
        r"(?:clean |hot |cool |cold )?(?P<o>[a-z]+)\s*(?:(?P<p>in|on|in/on|under|with) "
        r"(?:the )?(?P<d>[a-z]+))?"
    )

    def roles(self, task: Task) -> dict[str, str]:
        params = task.payload.get("pddl_params") or {}
        out = {
            "object": _norm(params.get("object_target", "")),
            "destination": _norm(params.get("parent_target", "")),
            "container": _norm(params.get("mrecep_target", "")),
            "lamp": _norm(params.get("toggle_target", "")),
        }
        if not out["object"] and (m := self._GOAL.search(_norm(task.goal))):
            out["object"] = m.group("o")
            out["lamp" if m.group("p") in ("under", "with") else "destination"] = m.group("d") or ""
        kind = str(task.payload.get("task_type", "")) + " " + _norm(task.goal)
        out["tool"] = next((t for verb, t in self.TOOLS.items() if verb in kind), "")
        return {r: e for r, e in out.items() if e}


class ScienceWorldAdapter(GenericAdapter):
    env = "scienceworld"
    _OBJECT = re.compile(
        r"your task is to (?:boil|melt|freeze|change the state of matter of|measure the "
        r"temperature of|find an?|grow an?|determine [^.]*? of|focus on the|use the)\s+"
        r"(?:the )?(?P<x>[a-z0-9 ]+?)(?:[,.]| which| by| in| to)"
    )
    _DEST = re.compile(r"(?:place it in|move it to|put it in) the (?P<x>[a-z0-9 ]+?)[,.]")

    def roles(self, task: Task) -> dict[str, str]:
        goal = _norm(task.goal) + "."
        out: dict[str, str] = {}
        if m := self._OBJECT.search(goal):
            out["object"] = m.group("x").strip()
        if "thermometer" in goal:
            out["tool"] = "thermometer"
        if m := self._DEST.search(goal):
            out["destination"] = m.group("x").strip()
        return {r: e for r, e in out.items() if e and e not in ("substance", "thing")}


class PddlAdapter(GenericAdapter):
    env = "pddl"
    id_suffix = r"\d*"
    _ATOM = re.compile(r"\(\s*([\w-]+)((?:\s+[\w-]+)*)\s*\)")

    def roles(self, task: Task) -> dict[str, str]:
        pddl = str(task.payload.get("problem_pddl", "")).lower()
        goal = pddl.split(":goal", 1)[1] if ":goal" in pddl else ""
        out: dict[str, str] = {}
        counts = {"object": 0, "destination": 0}
        for _, args in self._ATOM.findall(goal):
            args = args.split()
            for role, entity in (("object", args[:1]), ("destination", args[1:][-1:])):
                if entity and entity[0] not in out.values():
                    counts[role] += 1
                    out[role + (str(counts[role]) if counts[role] > 1 else "")] = entity[0]
        return out

    def state_cue(self, observation: str) -> str:
        text = str(observation).split("\n", 1)[0]
        if text.startswith("Now true:"):
            text = text.split(" No longer true:", 1)[0]
            return " ".join(_norm(text).split()[:12])
        if "goal is to satisfy" in str(observation):
            return "start"
        return _first_sentence(text)

    _IDS = re.compile(r"(?<![<\w])([a-z][a-z\-]*?)\d+\b")


class WikiAdapter(GenericAdapter):
    """FEVER / HotpotQA ReAct actions: ``Search[x]``, ``Lookup[x]``, ``Finish[x]``."""

    env = "wiki"
    keep_finish_label = False
    _CALL = re.compile(r"^\s*(search|lookup|finish|think)\s*\[(.*)\]\s*$", re.I | re.S)
    _ENTITY = re.compile(
        r"[A-Z][\w'&.\-]*(?:\s+(?:(?:of|the|and|de|von|van|in)\s+)*[A-Z0-9][\w'&.\-]*)*"
    )
    _SKIP = frozenset(
        "who which what when where whose how is are was were did does do in the a an".split()
    )

    def roles(self, task: Task) -> dict[str, str]:
        text = re.sub(r"^\s*(claim|question)\s*:\s*", "", str(task.goal), flags=re.I)
        out: dict[str, str] = {}
        for match in self._ENTITY.finditer(text):
            entity = match.group(0).strip(" .")
            if entity.lower() in self._SKIP or entity.lower() in map(str.lower, out.values()):
                continue
            out["subject" + (str(len(out) + 1) if out else "")] = entity
        return out

    def state_cue(self, observation: str) -> str:
        text = str(observation).strip()
        if not text or text.startswith("No page is open"):
            return "no page"
        if text.startswith("Could not find"):
            return "search miss"
        if text.startswith("No more results"):
            return "lookup exhausted"
        if text.startswith("(Result"):
            return "lookup result"
        if text.startswith("Invalid action") or text.startswith("Episode finished"):
            return _first_sentence(text, 4)
        head = re.split(r"\s(?:is|was|are|were|has|had)\s", text, maxsplit=1)[0]
        return "page: " + " ".join(_norm(head).split()[:6])

    def _role_of(self, arg: str, roles: dict[str, str]) -> str | None:
        return next((r for r, e in sorted(roles.items()) if _norm(e) == _norm(arg)), None)

    def abstract_action(self, action: str, roles: dict[str, str]) -> str | None:
        m = self._CALL.match(str(action))
        if m is None:
            return None
        verb, arg = m.group(1).capitalize(), " ".join(m.group(2).split())
        role = self._role_of(arg, roles)
        if verb == "Think":
            return "Think[...]"
        if role:
            return f"{verb}[<{role}>]"
        if verb == "Search":
            return "Search[<bridge>]"
        if verb == "Finish":
            return f"Finish[{arg.upper()}]" if self.keep_finish_label else "Finish[<answer>]"
        return f"Lookup[{_norm(arg)}]"

    def bind_action(
        self, abstract: str, roles: dict[str, str], admissible: list[str] | None
    ) -> str | None:
        filled = self.fill(abstract, roles)
        if admissible is None or filled is None:
            return filled
        return next((a for a in admissible if _norm(a) == _norm(filled)), None)


class FeverAdapter(WikiAdapter):
    env = "fever"
    keep_finish_label = True


class HotpotQAAdapter(WikiAdapter):
    env = "hotpotqa"


ADAPTERS: dict[str, GenericAdapter] = {
    "pddl": PddlAdapter(),
    "alfworld": AlfWorldAdapter(),
    "scienceworld": ScienceWorldAdapter(),
    "fever": FeverAdapter(),
    "hotpotqa": HotpotQAAdapter(),
}
GENERIC = GenericAdapter()


def agreed_roles(recorded: dict[str, str] | None, roles: dict[str, str]) -> dict[str, str]:
    """The roles ``recorded`` (None: nothing recorded yet) and ``roles`` agree on.

    A local record seen in several episodes keeps only the role entities every one of them
    shares; the intersection is commutative and associative, so the result does not depend on
    the order of the episodes (Proposition D.2). Retrieval reads it as the record's roles
    (``r_g`` mismatches, the case / reflection filter; see retrieval.py).
    """
    if recorded is None:
        return dict(sorted(roles.items()))
    return {r: e for r, e in sorted(recorded.items()) if roles.get(r) == e}


def adapter_for(env_name: str) -> GenericAdapter:
    """The adapter whose key prefixes ``env_name`` (``fever_smoke`` -> fever), else generic."""
    name = str(env_name).lower()
    for key in sorted(ADAPTERS, key=len, reverse=True):
        if name.startswith(key):
            return ADAPTERS[key]
    return GENERIC
