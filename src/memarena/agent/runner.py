"""The batched episode runner.

Up to ``concurrency`` episodes are stepped in lockstep: at every step the runner builds one
decision (a chat request) per active episode and makes a single ``policy.decide`` call for all
of them (one padded HF batch, a vLLM batch, concurrent HTTP requests). When an episode ends
its slot is refilled from the queue. An episode whose env raises (crash, timeout, bad state)
ends with status ``error`` and its error text; the other episodes go on. So does an episode
whose model request got no answer (fallback ``request_failed``: the server is down or timed
out after its retries); after ``max_failed_batches`` consecutive steps in which every request
failed, the run stops with :class:`~memarena.core.ServerUnreachableError` (the episodes that
ended so are on disk with status ``error``, and a resume retries them).
An episode whose prompt does not fit the model's context (fallback ``prompt_too_long``,
:mod:`memarena.llm.context_fit`) ends with status ``prompt_too_long``, a failure never retried.
With ``episode_timeout_s`` (``protocol.episode_timeout_s``) an episode still running that many
seconds after it started ends with status ``timeout`` (checked between steps) and the others go on.

Per episode the runner also counts the replies the agent could not act on
(``Outcome.invalid_replies``: a constrained answer outside its choices, an empty reply, an
action the env reports as ``invalid_action`` / ``parse_error``), the free-text replies whose
length reached the reply cap (:meth:`Policy.reply_limit`: cut by it, or ending on its last
token; kept as ``details["replies_at_cap"]`` when there are any), the prompts the backbone
fitted into the context (a completion's ``prompt_fit``, counted by kind in ``details``:
``prompt_truncated``, ``reply_shortened``, when there are any) and what the memory's
retrievals cost (:class:`~memarena.core.costs.MemoryCost`).

The decision-maker is a :class:`~memarena.agent.policy.Policy` (an LLM over a backbone, or the
env's expert); the runner hands it one :class:`~memarena.agent.policy.Decision` per active
episode and never asks which kind it is. Episode hooks (:class:`~memarena.core.env.Episode`):
``parse_reply`` turns a free-text reply into an action (None: one line, matched to the
admissible actions by :func:`~memarena.agent.parse.parse_action`; constrained choices never go
through it); ``details`` is kept as :attr:`EpisodeResult.details` as the episode ends (a failing
hook is logged, never raised).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from memarena.agent.autogen import (
    AGENT_LOOPS,
    HELPER,
    HELPER_PREAMBLE,
    LAYOUTS,
    META_CHECK,
    SOLVER_PREAMBLE,
    HistoryView,
    build_autogen,
    env_steps,
    executed_actions,
    meta_check_due,
    meta_check_messages,
    meta_check_thought,
    solver_stuck,
)
from memarena.agent.parse import parse_action
from memarena.agent.policy import Decision, Policy
from memarena.agent.prompts import (
    PROMPT_FORMATS,
    PROMPT_LAYOUTS,
    TOOL_CALLS,
    Conversation,
    MemorySpan,
    build_single,
    layout_conflict,
)
from memarena.core import (
    PROMPT_TOO_LONG,
    REQUEST_FAILED,
    ChatRequest,
    Completion,
    Env,
    Episode,
    Feedback,
    MemoryContext,
    MemoryMethod,
    MemoryQuery,
    Observation,
    Outcome,
    ServerUnreachableError,
    Step,
    Task,
    Trajectory,
)
from memarena.core.costs import MemoryCost, add_into, counters, difference, split
from memarena.core.env import env_family
from memarena.core.llm_types import stable_seed
from memarena.core.progress import Progress

log = logging.getLogger(__name__)

# env feedback labels that mean the env could not read the agent's action
UNREADABLE = frozenset({"invalid_action", "parse_error"})
# completion fallbacks of a reply that broke its constraint (not among the choices)
BROKEN = frozenset({"choice_invalid", "choice_unmatched", "json_invalid"})


@dataclass
class RunnerSettings:
    concurrency: int = 8
    step_budget: int = 30
    history_steps: int | None = 10  # steps shown (see memarena.agent.prompts; None: all)
    action_mode: str = "choice"  # "choice" (constrained to admissible actions) or "free"
    temperature: float = 0.0
    max_tokens: int = 48
    stop: tuple[str, ...] = ()  # a free reply ends at any of these (protocol.stop)
    seed: int = 0
    max_failed_batches: int = 3  # consecutive all-failed steps before the run stops
    episode_timeout_s: float | None = None  # wall-clock limit per episode (status timeout)
    record_prompts: bool = False  # keep each step's messages in its Step (protocol.record_prompts)
    record_memory: bool = False  # keep each step's memory text (protocol.record_memory)
    prompt_format: str = "conversation"  # or "single" (see memarena.agent.prompts)
    # "memarena" or "reme_bfcl" (ReMe's released BFCL agent; see memarena.agent.prompts)
    prompt_layout: str = "memarena"
    tool_calls: str = "native"  # tool-calling envs: "native" where the backbone takes tools; "text"
    # "memarena" (the prompt_format above) or a released loop (see memarena.agent.autogen)
    agent_loop: str = "memarena"
    history_observation_chars: int | None = None  # released loop: past observations cut so

    def __post_init__(self) -> None:
        if self.agent_loop not in AGENT_LOOPS:
            raise ValueError(
                f"protocol.agent_loop must be one of {AGENT_LOOPS}, not {self.agent_loop!r}"
            )
        if self.prompt_format not in PROMPT_FORMATS:
            raise ValueError(
                f"protocol.prompt_format must be one of {PROMPT_FORMATS}, "
                f"not {self.prompt_format!r}"
            )
        if self.prompt_layout not in PROMPT_LAYOUTS:
            raise ValueError(
                f"protocol.prompt_layout must be one of {PROMPT_LAYOUTS}, "
                f"not {self.prompt_layout!r}"
            )
        conflict = layout_conflict(self.prompt_layout, self.prompt_format, self.agent_loop)
        if conflict:
            raise ValueError(conflict)
        if self.tool_calls not in TOOL_CALLS:
            raise ValueError(
                f"protocol.tool_calls must be 'native' or 'text', not {self.tool_calls!r}"
            )
        if self.action_mode not in ("choice", "free"):
            raise ValueError(
                f"protocol.action_mode must be 'choice' or 'free', not {self.action_mode!r}"
            )
        if self.concurrency < 1:
            raise ValueError(f"protocol.concurrency must be >= 1, not {self.concurrency}")
        if self.max_failed_batches < 1:
            raise ValueError(
                f"protocol.max_failed_batches must be >= 1, not {self.max_failed_batches}"
            )


@dataclass
class EpisodeResult:
    trajectory: Trajectory
    outcome: Outcome
    wall_s: float
    order: int  # position of the task in the input list
    details: dict | None = None  # the episode's optional details() at its end
    memory_cost: dict | None = None  # MemoryCost.to_json() of its retrievals


@dataclass
class _Live:
    order: int
    task: Task
    episode: Episode
    observation: Observation
    trajectory: Trajectory
    run: int = 0
    memory: MemoryContext = field(default_factory=MemoryContext.empty)
    progress: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    invalid_replies: int = 0
    helper_turns: int = 0  # steps the stuck-solver helper chose (released agent loop)
    replies_at_cap: int = 0  # free-text replies as long as the reply cap (see the docstring)
    prompt_fits: dict[str, int] = field(default_factory=dict)  # completions' prompt_fit counts
    cost: MemoryCost = field(default_factory=MemoryCost)
    started: float = field(default_factory=time.perf_counter)
    status: str = "failure"
    success: bool = False
    error: str | None = None
    conversation: Conversation | None = None  # the conversation format's chat so far
    reply: str = ""  # the last reply, added to the conversation with the next observation
    spans: list[MemorySpan] = field(default_factory=list)  # the memory in the step's prompt
    asked: list = field(default_factory=list)  # the messages the last step's action answered


def _error_result(trajectory: Trajectory, exc: Exception, t0: float, order: int) -> EpisodeResult:
    """An episode that could not start (env or memory failed): status ``error``, the run goes
    on."""
    outcome = Outcome(False, 0.0, 0, "error", error=_error_text(exc))
    return EpisodeResult(trajectory, outcome, time.perf_counter() - t0, order)


class EpisodeRunner:
    def __init__(
        self,
        env: Env,
        policy: Policy,
        memory: MemoryMethod,
        settings: RunnerSettings,
        *,
        phase: str = "eval",
        run: int = 0,
        progress_bar: bool = True,
        retrieve: bool = True,
    ) -> None:
        self.env = env
        self.policy = policy
        self.memory = memory
        self.s = settings
        self.phase = phase
        self.run_index = run
        self.progress_bar = progress_bar
        self.retrieve = retrieve  # False: the memory is not read (a method that does not read
        # its memory while acquiring); episodes see no memory slots
        self._runs: list[int] | None = None
        self._failed_batches = 0  # consecutive steps in which every request failed
        # what this runner's retrievals added to the memory's counters (see core.costs)
        self.retrieval_spent: dict = {}
        self._family = env_family(getattr(env, "name", ""))

    # --------------------------------------------------------------------------------------
    def run(
        self,
        tasks: Sequence[Task],
        on_finish: Callable[[EpisodeResult], None] | None = None,
        *,
        runs: Sequence[int] | None = None,
    ) -> list[EpisodeResult]:
        """Run every task to its end; ``on_finish`` is called as each episode ends.

        ``runs`` (one per task) overrides the runner's run index per episode, so one call can
        hold several samples of the same task (ReMe's N trajectories per task) with different
        request seeds and cache keys."""
        if runs is not None and len(runs) != len(tasks):
            raise ValueError(f"runs has {len(runs)} entries for {len(tasks)} tasks")
        self._runs = list(runs) if runs is not None else None
        queue = list(enumerate(tasks))
        queue.reverse()
        live: list[_Live] = []
        results: list[EpisodeResult] = []
        bar = Progress(
            len(tasks),
            f"{self.phase} run {self.run_index}",
            unit="tasks",
            disable=not self.progress_bar,
        )

        def finish(result: EpisodeResult) -> None:
            results.append(result)
            bar.update(1)
            if on_finish is not None:
                on_finish(result)

        try:
            while queue or live:
                starting = []
                while queue and len(live) + len(starting) < self.s.concurrency:
                    started = self._start(*queue.pop())
                    if isinstance(started, EpisodeResult):
                        finish(started)
                    else:
                        starting.append(started)
                for item in self._retrieve_first(starting):
                    if isinstance(item, EpisodeResult):
                        finish(item)
                    else:
                        live.append(item)
                if not live:
                    continue
                for ended in self._step_all(live):
                    live.remove(ended)
                    finish(self._finish(ended))
                for late in self._timed_out(live):
                    live.remove(late)
                    finish(self._finish(late))
                if self._failed_batches >= self.s.max_failed_batches:
                    raise ServerUnreachableError(self._unreachable(results))
        finally:
            for item in live:
                self._close(item.episode)
            bar.close()
        results.sort(key=lambda r: r.order)
        return results

    # --------------------------------------------------------------------------------------
    def _start(self, order: int, task: Task) -> _Live | EpisodeResult:
        t0 = time.perf_counter()
        episode: Episode | None = None
        try:
            episode = self.env.open(task)
            obs = episode.reset()
            run = self._runs[order] if self._runs is not None else self.run_index
            return _Live(order, task, episode, obs, Trajectory(task, obs.text), run, started=t0)
        except Exception as exc:  # env failed to start: record and go on
            log.warning("episode %s failed to start: %s", task.id, exc)
            if episode is not None:
                self._close(episode)
            return _error_result(Trajectory(task, ""), exc, t0, order)

    def _retrieve_first(self, starting: list[_Live]) -> list[_Live | EpisodeResult]:
        """The episodes' first retrieval, one :meth:`MemoryMethod.retrieve_batch` for all of
        them; a failing retrieval ends those episodes with status ``error``."""
        if not self.retrieve or not starting:
            return list(starting)
        queries = [MemoryQuery(task=item.task, observation=item.observation) for item in starting]
        before = counters(self.memory)
        try:
            contexts = self.memory.retrieve_batch(queries)
            if len(contexts) != len(starting):
                raise RuntimeError(
                    f"{type(self.memory).__name__}.retrieve_batch returned {len(contexts)} "
                    f"contexts for {len(starting)} queries"
                )
        except Exception as exc:
            log.warning("memory retrieval failed for %d episodes: %s", len(starting), exc)
            return [self._failed_start(item, exc) for item in starting]
        shares = split(difference(counters(self.memory), before), len(starting))
        for item, context, spent in zip(starting, contexts, shares, strict=True):
            item.memory = context
            item.cost.add(context.memory_ids, context.slots, spent)
            add_into(self.retrieval_spent, spent)
            item.trajectory.memory_ids = list(context.memory_ids)
        return list(starting)

    def _failed_start(self, item: _Live, exc: Exception) -> EpisodeResult:
        self._close(item.episode)
        return _error_result(item.trajectory, exc, item.started, item.order)

    def _decision(self, item: _Live) -> Decision:
        obs = item.observation
        step = env_steps(item.trajectory.steps)
        if self.retrieve and self.memory.granularity == "step" and step > 0:
            query = MemoryQuery(
                task=item.task,
                observation=obs,
                step=step,
                history=item.trajectory.steps,
                progress=item.progress,
            )
            self._retrieve(item, query)
            for mid in item.memory.memory_ids:
                if mid not in item.trajectory.memory_ids:
                    item.trajectory.memory_ids.append(mid)
        choices = None
        if self.s.action_mode == "choice" and obs.admissible_actions:
            choices = list(dict.fromkeys(obs.admissible_actions))
        show_actions = choices is None and bool(obs.admissible_actions)
        prompt = self.env.prompt(item.task)
        tools = None
        if self.s.agent_loop in LAYOUTS:
            messages, item.spans = build_autogen(
                prompt,
                item.task,
                obs,
                item.trajectory.steps,
                item.memory,
                layout=LAYOUTS[self.s.agent_loop],
                family=self._family,
                initial_observation=item.trajectory.initial_observation,
                examples=self.memory.benchmark_examples,
                show_actions=show_actions,
                view=HistoryView(self.s.history_steps, self.s.history_observation_chars),
            )
        elif self.s.prompt_format == "single":
            messages, item.spans = build_single(
                prompt,
                item.task,
                obs,
                item.trajectory.steps,
                item.memory,
                initial_observation=item.trajectory.initial_observation,
                history_steps=self.s.history_steps,
                show_actions=show_actions,
                examples=self.memory.benchmark_examples,
            )
        else:
            if item.conversation is None:
                item.conversation = Conversation.start(
                    prompt,
                    item.task,
                    obs,
                    item.memory,
                    show_actions=show_actions,
                    examples=self.memory.benchmark_examples,
                    history_steps=self.s.history_steps,
                    native_tools=self._native_tools(prompt),
                    layout=self.s.prompt_layout,
                )
            else:
                step_memory = item.memory if self.memory.granularity == "step" else None
                item.conversation.add_step(item.reply, obs, step_memory, show_actions=show_actions)
            messages, item.spans = item.conversation.prompt()
            if item.conversation.native_tools:
                tools = prompt.tools
        key = f"{self.phase}:{item.run}:{item.task.id}:{env_steps(item.trajectory.steps)}"
        request = ChatRequest(
            messages=messages,
            choices=choices,
            temperature=self.s.temperature,
            max_tokens=self.s.max_tokens,
            seed=stable_seed(self.s.seed, key),
            tools=tools,
            stop=list(self.s.stop) if self.s.stop and choices is None else None,
        )
        return Decision(request, item.episode, key)

    def _native_tools(self, prompt) -> bool:
        """Native tool calls: the env has tools, the protocol asks for them and the agent's
        backbone takes them (else the env's text format)."""
        return bool(prompt.tools) and self.s.tool_calls == "native" and self.policy.native_tools

    def _retrieve(self, item: _Live, query: MemoryQuery) -> None:
        """Ask the memory, counting what it showed and what answering cost."""
        before = counters(self.memory)
        item.memory = self.memory.retrieve(query)
        spent = difference(counters(self.memory), before)
        item.cost.add(item.memory.memory_ids, item.memory.slots, spent)
        add_into(self.retrieval_spent, spent)

    def _step_all(self, live: list[_Live]) -> list[_Live]:
        """One lockstep: a request per live episode, one batched call, one env step each (in
        the released agent loop, a second batched call for the stuck solvers' helper, and one
        for MemCo's meta-checks after the step)."""
        ended: list[_Live] = []
        decisions: list[Decision] = []
        asking: list[_Live] = []
        for item in live:
            try:
                decisions.append(self._decision(item))
                asking.append(item)
            except Exception as exc:
                self._fail(item, exc)
                ended.append(item)
        completions = self.policy.decide(decisions) if decisions else []
        failed = [c.fallback == REQUEST_FAILED for c in completions]
        if failed:
            self._failed_batches = self._failed_batches + 1 if all(failed) else 0
        chosen: list[tuple[_Live, Decision, Completion, str]] = []
        for item, decision, completion in zip(asking, decisions, completions, strict=True):
            action = self._answered(item, decision, completion, ended)
            if action is not None:
                chosen.append((item, decision, completion, action))
        helped = self._helper_turns(chosen, ended) if self.s.agent_loop in LAYOUTS else {}
        stepped: list[_Live] = []
        for item, decision, completion, action in chosen:
            if item in ended:
                continue
            if id(item) in helped:
                decision, completion, action = helped[id(item)]
            try:
                result = item.episode.step(action)
            except Exception as exc:
                self._fail(item, exc)
                ended.append(item)
                continue
            item.invalid_replies += _unreadable(completion, action, result)
            limit = self.policy.reply_limit(decision.request)
            if limit is not None and completion.choice_index is None:
                item.replies_at_cap += int(completion.completion_tokens >= limit)
            item.trajectory.steps.append(
                Step(
                    action=action,
                    observation=result.observation.text,
                    reward=result.reward,
                    progress=result.progress,
                    feedback=result.feedback,
                    raw_output=completion.text,
                    admissible_actions=item.observation.admissible_actions,
                    prompt=decision.request.messages if self.s.record_prompts else None,
                    # the ids shown at this step, always (cheap; the viewer's reading): the
                    # memory text itself only with protocol.record_memory
                    memory_ids=list(item.memory.memory_ids),
                    memory=dict(item.memory.slots) if self.s.record_memory else None,
                    memory_spans=(
                        [span.to_json() for span in item.spans] if self.s.record_prompts else None
                    ),
                    memory_entries=(
                        dict(item.memory.entries)
                        if self.s.record_memory and item.memory.entries
                        else None
                    ),
                    agent=HELPER if id(item) in helped else None,
                )
            )
            item.observation = result.observation
            item.asked = decision.request.messages
            item.reply = completion.text if completion.text.strip() else action
            item.progress = max(item.progress, result.progress)
            n = env_steps(item.trajectory.steps)
            if result.done:
                item.status = "success" if result.success else "failure"
                item.success = result.success
                ended.append(item)
            elif n >= self.s.step_budget:
                item.status = "budget"
                item.success = False
                ended.append(item)
            else:
                stepped.append(item)
        if self.s.agent_loop in LAYOUTS and LAYOUTS[self.s.agent_loop].meta_check:
            self._meta_checks(stepped)
        return ended

    def _helper_turns(
        self, chosen: list[tuple[_Live, Decision, Completion, str]], ended: list[_Live]
    ) -> dict[int, tuple[Decision, Completion, str]]:
        """The released stuck-solver helper: for every episode whose solver repeats the last
        two executed actions, the same user message under the helper's preamble, answered in
        one batched call; its action replaces the solver's (see memarena.agent.autogen)."""
        stuck = [
            (item, decision)
            for item, decision, _, action in chosen
            if solver_stuck(executed_actions(item.trajectory.steps), action)
        ]
        if not stuck:
            return {}
        decisions = []
        for item, decision in stuck:
            messages = [dict(m) for m in decision.request.messages]
            system = messages[0]["content"]
            messages[0]["content"] = HELPER_PREAMBLE + system[len(SOLVER_PREAMBLE) :]
            key = decision.key + ":helper"
            request = replace(
                decision.request, messages=messages, seed=stable_seed(self.s.seed, key)
            )
            decisions.append(Decision(request, item.episode, key))
        completions = self.policy.decide(decisions)
        out: dict[int, tuple[Decision, Completion, str]] = {}
        for (item, _), decision, completion in zip(stuck, decisions, completions, strict=True):
            action = self._answered(item, decision, completion, ended)
            if action is not None:
                item.helper_turns += 1
                out[id(item)] = (decision, completion, action)
        return out

    def _answered(
        self, item: _Live, decision: Decision, completion: Completion, ended: list[_Live]
    ) -> str | None:
        """The action a completion answers (its tokens counted), or None when the request
        got no answer or the reply could not be turned into an action: the episode then ends
        with status ``error`` (added to ``ended``)."""
        item.prompt_tokens += completion.prompt_tokens
        item.completion_tokens += completion.completion_tokens
        if completion.prompt_fit:
            fits = item.prompt_fits
            fits[completion.prompt_fit] = fits.get(completion.prompt_fit, 0) + 1
        if completion.fallback == PROMPT_TOO_LONG:
            item.status, item.success, item.error = PROMPT_TOO_LONG, False, completion.error
            ended.append(item)
            return None
        try:
            if completion.fallback == REQUEST_FAILED:
                raise RequestFailed(completion.error or "no answer")
            return self._action(item, decision.request, completion)
        except Exception as exc:
            self._fail(item, exc)
            ended.append(item)
            return None

    def _meta_checks(self, stepped: list[_Live]) -> None:
        """MemCo's meta-check (gpt-4o-mini on ALFWorld, every 5th step): a ``think:`` line
        from the solver joins the trajectory as a step answered ``OK.``, sent to no env and
        using no step; any other reply is dropped."""
        due = [
            item
            for item in stepped
            if meta_check_due(
                self.policy.name, self._family, env_steps(item.trajectory.steps), False
            )
        ]
        if not due:
            return
        decisions = []
        for item in due:
            messages = meta_check_messages(item.asked, item.observation.admissible_actions)
            key = f"{self.phase}:{item.run}:{item.task.id}:{env_steps(item.trajectory.steps)}:meta"
            request = ChatRequest(
                messages=messages,
                temperature=self.s.temperature,
                max_tokens=self.s.max_tokens,
                seed=stable_seed(self.s.seed, key),
                stop=list(self.s.stop) if self.s.stop else None,
            )
            decisions.append(Decision(request, item.episode, key))
        for item, completion in zip(due, self.policy.decide(decisions), strict=True):
            item.prompt_tokens += completion.prompt_tokens
            item.completion_tokens += completion.completion_tokens
            thought = meta_check_thought(completion.text)
            if thought is None:
                continue
            item.trajectory.steps.append(
                Step(
                    action=thought,
                    observation="OK.",
                    reward=0.0,
                    progress=item.progress,
                    feedback=Feedback(True, False, None),
                    raw_output=completion.text,
                    agent=META_CHECK,
                )
            )

    def _timed_out(self, live: list[_Live]) -> list[_Live]:
        """The live episodes past ``episode_timeout_s``, ended with status ``timeout``. Checked
        between steps: an episode ends at most one step after its limit (that step's model call
        and env step are bounded by the backbone and the env)."""
        limit = self.s.episode_timeout_s
        if limit is None:
            return []
        now, late = time.perf_counter(), []
        for item in live:
            spent = now - item.started
            if spent > limit:
                log.warning(
                    "episode %s timed out after %.1fs at step %d (protocol.episode_timeout_s=%s)",
                    item.task.id, spent, len(item.trajectory.steps), limit,
                )  # fmt: skip
                item.status, item.success = "timeout", False
                item.error = (
                    f"timeout: {spent:.1f}s after {len(item.trajectory.steps)} steps, over "
                    f"protocol.episode_timeout_s={limit}"
                )
                late.append(item)
        return late

    @staticmethod
    def _action(item: _Live, request: ChatRequest, completion: Completion) -> str:
        """The chosen choice, else the episode's ``parse_reply``, else ``parse_action``."""
        if completion.choice_index is not None and request.choices:
            return request.choices[completion.choice_index]
        parsed = item.episode.parse_reply(completion.text)
        if parsed is not None:
            return parsed
        return parse_action(completion.text, item.observation.admissible_actions)

    def _unreachable(self, results: list[EpisodeResult]) -> str:
        last = next((r.outcome.error for r in reversed(results) if r.outcome.error), "")
        return (
            f"memarena: the agent's model ({self.policy.name}) answered none of the requests of "
            f"{self._failed_batches} steps in a row; the server is down or unreachable "
            f"(last error: {last[:300]}). The episodes that ended so are recorded with status "
            "error and a rerun retries them (protocol.retry_errors). Start the server or fix "
            "backbone.base_url, then rerun the same command; protocol.max_failed_batches sets "
            "how many such steps end a run."
        )

    def _fail(self, item: _Live, exc: BaseException) -> None:
        log.warning(
            "episode %s failed at step %d: %s", item.task.id, len(item.trajectory.steps), exc
        )
        item.status = "error"
        item.success = False
        item.error = _error_text(exc)

    def _finish(self, item: _Live) -> EpisodeResult:
        details = self._details(item.episode)
        if item.replies_at_cap:
            details = {**(details or {}), "replies_at_cap": item.replies_at_cap}
        if item.prompt_fits:
            details = {**(details or {}), **dict(sorted(item.prompt_fits.items()))}
        self._close(item.episode)
        outcome = Outcome(
            success=item.success,
            progress=item.progress,
            steps=env_steps(item.trajectory.steps),
            status=item.status,
            error=item.error,
            prompt_tokens=item.prompt_tokens,
            completion_tokens=item.completion_tokens,
            invalid_replies=item.invalid_replies,
            helper_turns=item.helper_turns,
        )
        return EpisodeResult(
            item.trajectory,
            outcome,
            time.perf_counter() - item.started,
            item.order,
            details=details,
            memory_cost=item.cost.to_json(),
        )

    @staticmethod
    def _details(episode: Episode) -> dict | None:
        try:
            details = episode.details()
            return dict(details) if details is not None else None
        except Exception as exc:  # details are for analysis only: never take the run down
            log.warning("episode details failed: %s", exc)
            return None

    @staticmethod
    def _close(episode: Episode) -> None:
        try:
            episode.close()
        except Exception as exc:  # closing must never take the run down
            log.warning("closing an episode failed: %s", exc)


class RequestFailed(Exception):
    """The model request of a step got no answer (its text says why)."""


def _unreadable(completion: Completion, action: str, result) -> int:
    """1 when the agent's reply could not be acted on (see the module docstring)."""
    label = result.feedback.failure_label
    return int(completion.fallback in BROKEN or not action.strip() or label in UNREADABLE)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, RequestFailed):
        return f"LLM request failed: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"
