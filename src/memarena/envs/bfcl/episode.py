"""One BFCL v3 multi-turn episode, played turn by turn on the package's API classes.

- Observation: the current user turn (at reset and after each NEXT; ``user_turn`` set), or the
  execution results of the calls just made, one ``call -> result`` line each (and each result
  alone in ``tool_results``: the tool messages of native tool calls). A miss_func turn whose
  message is the release of held-out functions shows the package's release sentence and the
  new function documents. ``Observation.goal`` is the user's turns so far.
- Action: a Python-style call list (``[cd(folder='x'), ls()]``; a single call is accepted),
  parsed with :mod:`ast` (literal arguments only) and executed through
  ``execute_multi_turn_func_call`` under a model name unique to this episode (the package
  caches instances by model name + task id). ``NEXT`` or ``[]`` ends the turn.
  :meth:`BfclEpisode.parse_reply` turns a model's reply into that form: a call list anywhere
  in the text (fenced, after prose or an ``Action:`` prefix), Qwen/Hermes ``<tool_call>``
  blocks, or OpenAI-style JSON calls. As in the package's handler, a reply that decodes into
  no calls (text to the user) ends the turn when ``text_ends_turn`` is set (feedback
  ``text_reply``), and more than ``turn_step_limit`` steps within one turn end the episode
  (feedback ``turn_step_limit``; the package force-quits after 20).
- Success: the verdict of the package's evaluator (``eval_runner.multi_turn_runner``) on the
  executed call lists: steps that executed nothing are left out; the turns it receives are
  those ``empty_turns`` gives (``drop``: ReMe's released extraction leaves out every turn
  without calls; ``keep``: every turn reached, as gorilla's own inference records them); fewer
  turns than the ground truth fail the task as ``multi_turn:force_terminated`` (the runner's
  turn-count check), else ``multi_turn_checker`` decides. Progress: the fraction of turns
  whose prefix passes the checker (every turn kept), computed at each turn end.
- Feedback: a parse error or an unknown function gives ``invalid_action`` (nothing runs); a
  step whose every call fails in the API gives ``execution_error``; ``state_changed`` compares
  the API instances' public state before and after.
- Expert: the ground-truth calls of the current turn as one list, then NEXT.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import re
import uuid
from typing import Any

from memarena.core.env import Episode
from memarena.core.types import Feedback, Observation, StepResult, Task
from memarena.envs.bfcl.prompts import RELEASE_MESSAGE, render_functions

NEXT = "NEXT"
DONE_MESSAGE = "The conversation is over; no further actions are taken."
ERROR_PREFIX = "Error during execution"
# which turns the scorer receives (env.empty_turns): drop = ReMe's extract_multi_turn_responses
# (a turn without calls is left out), keep = gorilla's inference (every turn reached)
EMPTY_TURNS = ("drop", "keep")
FORCE_TERMINATED = "multi_turn:force_terminated"
_counter = itertools.count()


class ParseError(ValueError):
    pass


def _literal(node: ast.expr) -> None:
    try:
        ast.literal_eval(node)
    except ValueError as exc:
        raise ParseError(f"argument {ast.unparse(node)!r} is not a literal value") from exc


def parse_calls(action: str) -> list[str]:
    """``"[f(a=1), g()]"`` -> ``["f(a=1)", "g()"]`` (canonical spelling); ParseError otherwise."""
    text = action.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("python").strip()
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise ParseError(f"not a Python call list ({exc.msg})") from exc
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ParseError(f"{ast.unparse(node)!r} is not a function call such as f(x=1)")
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            _literal(arg)
        if any(k.arg is None for k in node.keywords):
            raise ParseError("**kwargs is not supported")
        calls.append(ast.unparse(node))
    return calls


# -- reply parsing -------------------------------------------------------------------------------
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_ACTION = re.compile(r"^[ \t]*(?:next[ \t]+)?action(?:[ \t]*\d+)?[ \t]*[:\-][ \t]*", re.I | re.M)
_MAX_SPANS = 64


def _render(calls: list[str]) -> str:
    return "[" + ", ".join(calls) + "]"


def _json_call(item: Any) -> str:
    """One ``{"name": .., "arguments": ..}`` object (or OpenAI's ``{"function": {...}}``) as a
    call string with ``repr`` keyword literals; ValueError when it is not one."""
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ValueError("not a call object")
    name = item["name"].strip()
    args = item.get("arguments", item.get("parameters", {}))
    if isinstance(args, str):
        args = json.loads(args) if args.strip() else {}
    if args is None:
        args = {}
    if not name.isidentifier() or not isinstance(args, dict):
        raise ValueError("not a call object")
    if not all(isinstance(k, str) and k.isidentifier() for k in args):
        raise ValueError("argument names must be identifiers")
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def _json_calls(value: Any) -> list[str]:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValueError("no calls")
    return [_json_call(item) for item in items]


def _python_calls(text: str) -> list[str] | None:
    try:
        return parse_calls(text)
    except ParseError:
        return None


def _spans(text: str, opener: str) -> list[str]:
    """Balanced spans of ``text`` that start with ``opener`` (``[`` or ``{``; quotes
    respected), outermost first."""
    spans: list[str] = []
    i = 0
    while i < len(text) and len(spans) < _MAX_SPANS:
        if text[i] != opener:
            i += 1
            continue
        depth, quote, j = 0, "", i
        while j < len(text):
            ch = text[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch in "[({":
                depth += 1
            elif ch in "])}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if depth == 0 and j < len(text):
            spans.append(text[i : j + 1])
            i = j + 1
        else:
            i += 1
    return spans


def parse_reply(text: str) -> str:
    """A model's reply -> ``NEXT``, a canonical call list ``"[f(a=1), g(x='y')]"``, or the
    stripped text when it decodes into neither (the episode then reports it).

    Accepted: Qwen/Hermes ``<tool_call>{"name": .., "arguments": {..}}</tool_call>`` blocks (one
    or several); a JSON call object or list of them (``arguments`` a dict or a JSON string,
    ``{"function": {..}}`` wrappers too); a Python call list or single call, whole, in a code
    fence, after an ``Action:`` prefix, on a line of its own, or as a ``[...]`` span in prose.
    ``<think>`` blocks are ignored (the episode record keeps the whole reply); a reply cut inside
    one (``<think>`` never closed: the reply cap hit while reasoning) decodes into nothing, so
    none of the calls it was weighing runs.
    """
    raw = text.strip()
    body = raw.rsplit("</think>", 1)[-1] if "</think>" in raw else raw
    body = _THINK.sub("", body).split("<think>", 1)[0].strip()
    if body.upper() == NEXT:
        return NEXT
    blocks = _TOOL_CALL.findall(body)
    if blocks:
        try:
            return _render([call for b in blocks for call in _json_calls(json.loads(b))])
        except ValueError:
            return raw
    fences = [code.strip() for _, code in _FENCE.findall(body)]
    for candidate in [body, *fences, *_spans(body, "{"), *_spans(body, "[")]:
        if candidate[:1] in "{[":
            try:
                return _render(_json_calls(json.loads(candidate)))
            except ValueError:
                pass
    after = [body[m.end() :].strip() for m in _ACTION.finditer(body)]
    lines = [_ACTION.sub("", ln).strip().strip("`").strip() for ln in body.splitlines()]
    for candidate in [body, *fences, *after, *_spans(body, "["), *lines]:
        if not candidate:
            continue
        calls = _python_calls(candidate)
        if calls is not None and (calls or candidate in ("[]", "[ ]")):
            return _render(calls)
    tail = [ln.strip(" \t.`'\"*").upper() for ln in [*after, *lines] if ln]
    if NEXT in tail:
        return NEXT
    return raw


def _is_error(result: str) -> bool:
    """An exception in the API, or an API reply of the form {"error": ...}."""
    if result.startswith(ERROR_PREFIX):
        return True
    try:
        reply = json.loads(result)
    except ValueError:
        return False
    return isinstance(reply, dict) and "error" in reply


def _state(instances: dict[str, Any]) -> dict[str, Any]:
    return {
        name: copy.deepcopy({k: v for k, v in vars(obj).items() if not k.startswith("_")})
        for name, obj in instances.items()
    }


def _forget(prefix: str) -> None:
    """Drop the package's cached instances whose names start with ``prefix``."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    cache = vars(multi_turn_utils)
    for key in [k for k in cache if k.startswith(prefix)]:
        del cache[key]


def delivered_turns(
    calls: list[list[list[str]]], reached: int, empty_turns: str
) -> list[list[list[str]]]:
    """The executed call lists per turn as the scorer receives them: the first ``reached``
    turns, less every turn without calls under ``empty_turns="drop"``."""
    turns = calls[:reached]
    if empty_turns == "drop":
        return [turn for turn in turns if turn]
    return turns


def turn_count_verdict(delivered: int, expected: int) -> dict[str, Any] | None:
    """The package runner's check before its checker: a result with another number of turns
    than the ground truth fails the task as force-terminated (None: the counts agree)."""
    if delivered == expected:
        return None
    return {
        "valid": False,
        "error_type": FORCE_TERMINATED,
        "error_message": (
            f"{delivered} turns with calls were delivered for {expected} ground-truth turns"
        ),
    }


class BfclEpisode(Episode):
    """One task. ``text_ends_turn``: a reply that decodes into no calls ends the turn (as the
    package's handler does) instead of being an invalid action. ``turn_step_limit``: the
    episode ends once the steps within one turn exceed it (None: no limit). ``call_format``
    (``python`` | ``tool_call``) only picks the format named in error hints. ``empty_turns``
    (``drop`` | ``keep``): which turns the final verdict receives (see the module docstring)."""

    def __init__(
        self,
        task: Task,
        step_budget: int = 30,
        *,
        text_ends_turn: bool = True,
        turn_step_limit: int | None = 20,
        call_format: str = "python",
        doc_format: str = "json",
        empty_turns: str = "drop",
    ) -> None:
        if empty_turns not in EMPTY_TURNS:
            raise ValueError(f"empty_turns={empty_turns!r}; valid: {list(EMPTY_TURNS)}")
        self.empty_turns = empty_turns
        self.task = task
        self.doc_format = doc_format
        p = task.payload
        self.entry_id: str = p["id"]
        self.category: str = p["category"]
        self.turns: list[str] = list(p["turns"])
        self.ground_truth: list[list[str]] = [list(t) for t in p["ground_truth"]]
        self.initial_config: dict[str, Any] = p["initial_config"]
        self.classes: list[str] = list(p["involved_classes"])
        self.long_context = bool(p.get("long_context", False))
        self.missed: dict[str, list[dict[str, Any]]] = dict(p.get("missed_functions") or {})
        self.step_budget = step_budget
        self.text_ends_turn = text_ends_turn
        self.turn_step_limit = turn_step_limit
        self.format_hint = _FORMAT_HINTS.get(call_format, _FORMAT_HINTS["python"])
        self.model_name = ""
        self._reset_state()

    def _reset_state(self) -> None:
        self.turn = 0
        self.turns_done = 0
        self.steps_taken = 0
        self.turn_steps = 0
        self.calls: list[list[list[str]]] = [[] for _ in self.turns]
        self.available = {d["name"] for d in self.task.payload["functions"]}
        # every method of the task's classes runs, as in the package's executor; functions
        # held out (miss_func) are only *shown* once released
        self.known = self.available | {
            d["name"]
            for docs in self.task.payload.get("missed_functions", {}).values()
            for d in docs
        }
        self.done = self.success = False
        self.progress = 0.0
        self.verdict: dict[str, Any] | None = None
        self._state: dict[str, Any] = {}

    # -- package calls -------------------------------------------------------------------------
    def _execute(self, calls: list[str]) -> tuple[list[str], dict[str, Any]]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
            execute_multi_turn_func_call,
        )

        return execute_multi_turn_func_call(
            calls,
            self.initial_config,
            self.classes,
            self.model_name,
            self.entry_id,
            long_context=self.long_context,
        )

    def _check(self, n_turns: int) -> dict[str, Any]:
        """The package's checker on the first ``n_turns`` turns, every turn kept."""
        return self._checker(self.calls[:n_turns], self.ground_truth[:n_turns])

    def _checker(self, turns: list[list[list[str]]], truth: list[list[str]]) -> dict[str, Any]:
        """``multi_turn_checker`` on ``turns`` against ``truth`` (fresh instances per call)."""
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

        name = f"{self.model_name}_check{next(_counter)}"
        entry = {
            "id": self.entry_id,
            "initial_config": self.initial_config,
            "involved_classes": self.classes,
        }
        try:
            return multi_turn_checker(turns, truth, entry, self.category, name)
        except Exception as exc:  # the checker asserts on malformed states
            return {"valid": False, "error_type": "checker_exception", "error_message": str(exc)}
        finally:
            _forget(name)

    def _score(self) -> dict[str, Any]:
        """The final verdict, as the package's runner gives it: the turns ``empty_turns``
        delivers, the turn-count check, then the checker on every turn."""
        reached = len(self.turns) if self.turn >= len(self.turns) else self.turn + 1
        turns = delivered_turns(self.calls, reached, self.empty_turns)
        short = turn_count_verdict(len(turns), len(self.ground_truth))
        return short or self._checker(turns, self.ground_truth)

    # -- observations ----------------------------------------------------------------------------
    def _goal(self) -> str:
        said = [t for t in self.turns[: self.turn + 1] if t]
        return "\n".join(f"User: {t}" for t in said) or self.task.goal

    def _turn_text(self, label: str = "User: ") -> str:
        """The current turn's message; ``label=""``: the user's words as the entry gives them
        (``info["request"]``, what a layout sending the benchmark's own messages shows)."""
        docs = self.missed.get(str(self.turn))
        if docs:
            from bfcl_eval.constants.default_prompts import (
                DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
            )

            self.available |= {d["name"] for d in docs}
            release = RELEASE_MESSAGE.format(functions=render_functions(docs, self.doc_format))
            said = self.turns[self.turn] or DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
            return f"{release}\n{label}{said}"
        return f"{label}{self.turns[self.turn]}"

    def _obs(self, text: str, kind: str, results: list[str] | None = None) -> Observation:
        info = {"turn": self.turn, "turns": len(self.turns), "action_kind": kind}
        if self.verdict is not None:
            info["checker"] = {k: self.verdict.get(k) for k in ("valid", "error_type")}
        user_turn = kind in ("reset", "next") and not self.done
        if user_turn:  # the request without memarena's "User: " label
            info["request"] = self._turn_text(label="")
        return Observation(
            text, self._goal(), None, info, tool_results=results, user_turn=user_turn
        )

    # -- Episode protocol --------------------------------------------------------------------
    def reset(self) -> Observation:
        if self.model_name:
            _forget(self.model_name)
        self.model_name = f"memarena_bfcl_{uuid.uuid4().hex}"
        self._reset_state()
        _, instances = self._execute([])
        self._state = _state(instances)
        return self._obs(self._turn_text(), "reset")

    def parse_reply(self, text: str) -> str:
        """The runner's hook: a model reply -> NEXT, a canonical call list, or the stripped
        text (see :func:`parse_reply`)."""
        return parse_reply(text)

    def step(self, action: str) -> StepResult:
        if self.done:
            obs = Observation(DONE_MESSAGE, self._goal(), None, {"action_kind": "done"})
            return StepResult(
                obs, 0.0, True, self.success, self.progress, Feedback(False, False, "done")
            )
        self.steps_taken += 1
        action = parse_reply(action)  # idempotent on canonical actions
        if action == NEXT:
            return self._end_turn()
        try:
            calls = parse_calls(action)
        except ParseError as exc:
            if self.text_ends_turn:
                return self._end_turn(Feedback(True, False, "text_reply"))
            return self._in_turn(
                f"Invalid action: {exc}. {self.format_hint}",
                "invalid",
                Feedback(False, False, "invalid_action"),
            )
        if not calls:
            return self._end_turn()
        unknown = [c.split("(", 1)[0] for c in calls if c.split("(", 1)[0] not in self.known]
        if unknown:
            text = f"Invalid action: {unknown[0]} is not an available function; nothing was run."
            return self._in_turn(text, "invalid", Feedback(False, False, "invalid_action"))
        results, instances = self._execute(calls)
        self.calls[self.turn].append(calls)
        state = _state(instances)
        changed, self._state = state != self._state, state
        failed = all(_is_error(r) for r in results)
        text = "\n".join(f"{c} -> {r}" for c, r in zip(calls, results, strict=True))
        fb = Feedback(not failed, changed, "execution_error" if failed else None)
        return self._in_turn(text, "calls", fb, results)

    def _in_turn(
        self, text: str, kind: str, fb: Feedback, results: list[str] | None = None
    ) -> StepResult:
        """A step that stays in the current turn; past ``turn_step_limit`` such steps the
        episode ends (the package's force quit)."""
        self.turn_steps += 1
        if self.turn_step_limit is not None and self.turn_steps > self.turn_step_limit:
            self._finish()
            text += f"\nMore than {self.turn_step_limit} steps in one turn: the conversation ends."
            fb = Feedback(fb.valid_action, fb.state_changed, "turn_step_limit")
        return self._result(text, kind, fb, results)

    def _result(
        self, text: str, kind: str, fb: Feedback, results: list[str] | None = None
    ) -> StepResult:
        if not self.done and self.steps_taken >= self.step_budget:
            self._finish()
            text += "\nThe step budget is used up."
        reward = 1.0 if self.done and self.success else 0.0
        obs = self._obs(text, kind, results)
        return StepResult(obs, reward, self.done, self.success, self.progress, fb)

    def _end_turn(self, fb: Feedback | None = None) -> StepResult:
        self.turn += 1
        self.turns_done = self.turn
        self.turn_steps = 0
        if self.turn < len(self.turns) and self._check(self.turn).get("valid"):
            self.progress = max(self.progress, self.turn / len(self.turns))
        if self.turn >= len(self.turns):
            self._finish()
            text = "The conversation is over."
        else:
            text = self._turn_text()
        return self._result(text, "next", fb or Feedback(True, True, None))

    def _finish(self) -> None:
        self.verdict = self._score()
        self.success = bool(self.verdict.get("valid"))
        if self.success:
            self.progress = 1.0
        self.done = True
        self.turn = min(self.turn, len(self.turns) - 1)

    def details(self) -> dict[str, Any]:
        """For error analysis: the final checker verdict (None before the episode ends) and
        how many of the task's turns were ended."""
        verdict = self.verdict or {}
        valid = verdict.get("valid")
        return {
            "checker_valid": None if self.verdict is None else bool(valid),
            "checker_error_type": verdict.get("error_type"),
            "turns_done": self.turns_done,
            "turns": len(self.turns),
        }

    # -- expert --------------------------------------------------------------------------------
    def expert_action(self) -> str | None:
        """The ground-truth calls of the current turn as one list, then NEXT."""
        if self.done:
            return None
        gold = self.ground_truth[self.turn]
        if gold and not self.calls[self.turn]:
            return "[" + ", ".join(gold) + "]"
        return NEXT

    def noise_actions(self) -> list[str]:
        """Plausible wrong actions: available functions called without arguments, an unknown
        function, and a premature NEXT."""
        turn = [] if self.done else self.ground_truth[self.turn]
        gold = {c.split("(", 1)[0] for c in turn}
        names = sorted(self.available - gold)[:3]
        return [f"[{n}()]" for n in names] + ["[undo_last_action()]", NEXT]

    def close(self) -> None:
        """Drop this episode's API instances from the package's cache."""
        if self.model_name:
            _forget(self.model_name)


_FORMAT_HINTS = {
    "python": "Send a list of calls such as [cd(folder='document'), ls()] or NEXT.",
    "tool_call": (
        'Send one <tool_call>{"name": "cd", "arguments": {"folder": "document"}}</tool_call> '
        "block per call, or NEXT."
    ),
}
