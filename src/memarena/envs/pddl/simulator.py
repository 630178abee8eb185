"""A fast PDDL simulator on pyperplan: parse and ground once per problem, then step on sets.

A state is a ``frozenset`` of atom strings (``"(at ball1 rooma)"``) and includes the static
atoms (``"(room rooma)"``), so it can be rendered as is. Grounded actions keep only their
non-static preconditions (pyperplan drops the static ones and every grounding whose static
preconditions are false), so ``action.pre <= state`` is the whole applicability test.
Grounded problems are cached per (domain text, problem text).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from pyperplan import grounding
from pyperplan.pddl.parser import Parser

from memarena.envs.pddl.render import natural_key

log = logging.getLogger(__name__)

_NOISE = re.compile(r"[(),`\"']")
_SPACES = re.compile(r"\s+")


def normalize_action(text: str) -> str:
    """Lower-case, drop brackets, quotes, commas and a final full stop, collapse spaces."""
    text = _NOISE.sub(" ", text.strip().lower())
    text = _SPACES.sub(" ", text).strip()
    return text.rstrip(".").strip()


@dataclass(frozen=True)
class GroundAction:
    """One grounded action; ``text`` is its agent-facing form, e.g. ``"pick ball1 rooma left"``."""

    text: str
    pre: frozenset[str]
    add: frozenset[str]
    delete: frozenset[str]

    def apply(self, state: frozenset[str]) -> frozenset[str]:
        return (state - self.delete) | self.add


def _action_text(op_name: str) -> str:
    return op_name.strip("()")


class UndeclaredObjectError(ValueError):
    """A problem's goal names an object the problem does not declare."""


class GroundedProblem:
    """A parsed and grounded PDDL problem with text-level action lookup."""

    def __init__(self, domain_pddl: str, problem_pddl: str) -> None:
        try:
            parser = Parser(None)
            parser.domInput = domain_pddl
            parser.probInput = problem_pddl
            domain = parser.parse_domain(read_from_file=False)
            problem = parser.parse_problem(domain, read_from_file=False)
            task = grounding.ground(
                problem,
                remove_statics_from_initial_state=False,
                remove_irrelevant_operators=False,
            )
        except Exception as exc:  # pyperplan raises a mix of ParseError, SemanticError, ...
            msg = f"cannot parse/ground PDDL problem: {type(exc).__name__}: {exc}"
            raise ValueError(msg) from exc
        self.domain_name: str = domain.name
        self.problem_name: str = problem.name
        self.objects: frozenset[str] = frozenset(problem.objects)
        declared = self.objects | frozenset(getattr(domain, "constants", None) or ())
        for atom in sorted(task.goals):
            unknown = [a for a in atom.strip("()").split()[1:] if a not in declared]
            if unknown:  # a goal no state can reach: an unsolvable task, not a task
                raise UndeclaredObjectError(
                    f"the goal {atom} of problem {problem.name} names the object "
                    f"{', '.join(unknown)}, which its :objects (and the domain's :constants) "
                    "do not declare, so no plan can reach it; declare it in :objects or fix "
                    "the goal"
                )
        self.schemas: dict[str, int] = {
            name: len(action.signature) for name, action in domain.actions.items()
        }
        self.initial_state: frozenset[str] = frozenset(task.initial_state)
        self.goals: frozenset[str] = frozenset(task.goals)
        actions = [
            GroundAction(_action_text(op.name), op.preconditions, op.add_effects, op.del_effects)
            for op in task.operators
        ]
        actions.sort(key=lambda a: natural_key(a.text))
        self.actions: tuple[GroundAction, ...] = tuple(actions)
        self._by_text = {a.text: a for a in self.actions}
        log.debug(
            "grounded %s/%s: %d actions, %d init atoms",
            self.domain_name,
            self.problem_name,
            len(self.actions),
            len(self.initial_state),
        )

    @cached_property
    def fluents(self) -> frozenset[str]:
        """Atoms that some action can change (everything else is static)."""
        out: set[str] = set()
        for a in self.actions:
            out |= a.pre | a.add | a.delete
        return frozenset(out | self.goals)

    def applicable(self, state: frozenset[str]) -> list[GroundAction]:
        """Applicable actions in ``state``, in natural order of their text."""
        return [a for a in self.actions if a.pre <= state]

    def lookup(self, text: str) -> GroundAction | None:
        """The grounded action an agent's text names (after normalisation), if any."""
        return self._by_text.get(normalize_action(text))

    def is_known_form(self, text: str) -> bool:
        """True when the text names a domain action with the right arity and known objects.

        Such an action that is not applicable failed on its preconditions (possibly a static
        one, e.g. picking up a room); anything else is not an action of this problem at all.
        """
        parts = normalize_action(text).split()
        if not parts or parts[0] not in self.schemas:
            return False
        args = parts[1:]
        return len(args) == self.schemas[parts[0]] and all(a in self.objects for a in args)


@lru_cache(maxsize=512)
def load_problem(domain_pddl: str, problem_pddl: str) -> GroundedProblem:
    """Parse and ground once per (domain text, problem text)."""
    return GroundedProblem(domain_pddl, problem_pddl)
