"""ReMe's settings (``conf/method/reme.yaml`` carries the same keys, each with its source).

``reward`` and ``delete_every`` have the reading ``official``: what ReMe's released agent for
the benchmark uses, settled by the env's family when the run is built (:meth:`resolved`) and
written out resolved (metrics.json ``method_settings``, the snapshot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from memarena.core.env import env_family
from memarena.core.settings import MethodSettings, reading
from memarena.core.typecheck import Range

# reward: official -> the reward ReMe's agent for the benchmark ranks samples by: BFCL's checker
# gives 0/1 (bfcl_agent.py get_reward), AppWorld passed / all tests (appworld_react_agent.py);
# benchmarks ReMe's code does not cover: the env's progress
OFFICIAL_REWARD = {"bfcl": "success", "appworld": "progress"}
# delete_every: official -> trials between deletion passes in ReMe's agent for the benchmark:
# run_bfcl.py passes delete_freq=5; appworld_react_agent.py deletes after every trial (its
# counter check is commented out); benchmarks ReMe's code does not cover: BFCL's 5
OFFICIAL_DELETE_EVERY = {"bfcl": 5, "appworld": 1}

Count = Annotated[int, Range(ge=0)]
Positive = Annotated[int, Range(ge=1)]


@dataclass(frozen=True)
class ReMeSettings(MethodSettings):
    # -- acquisition (Section 3.2, Appendix C.1)
    samples: Positive = 8  # N trajectories per train task
    sample_temperature: Annotated[float, Range(ge=0)] = 0.9
    extraction: Literal["keypoint", "trajectory"] = "keypoint"  # Table 2's granularity
    max_experiences: Positive = 3
    judge: bool = True
    judge_min_score: Annotated[float, Range(ge=0, le=1)] = 0.5
    judge_sees_task: bool = reading(False, released=False, memarena=True)  # validation op
    judge_unparsed: Literal["keep", "drop"] = reading("keep", released="keep", memarena="drop")
    # similarity: ReMe's deduplication op, in its summary flow since 2025-12-02 (147901c6; the
    # reference 26cb5ca6); none: nothing deduplicated, the September 2025 flow (1257c30e), which
    # the released pools' timestamps (2025-09-19/20) suggest built them
    dedup: Literal["similarity", "none"] = reading(
        "similarity", released="similarity", sept2025_released="none"
    )
    dedup_threshold: Annotated[float, Range(ge=-1, le=1)] = 0.5  # a cosine
    dedup_against: Literal["usage_scenario", "content"] = reading(
        "usage_scenario", released="usage_scenario", memarena="content"
    )
    # task: a task's candidates are deduplicated and added before the next task's (ReMe's
    # summary flow, one task at a time); batch: a summary batch's candidates as one set
    dedup_scope: Literal["task", "batch"] = reading("task", released="task", memarena="batch")
    reward: Literal["official", "success", "progress"] = reading("official", released="official")
    generalize_queries: bool = True
    # -- reuse (Section 3.3, Appendix C.2)
    top_k: Count = 5
    retrieval_key: Literal[
        "usage_scenario", "task_query", "generalized_query", "keywords", "experience_keywords"
    ] = "usage_scenario"
    # the sampling agent runs without memory: memarena (the paper and the code sample without it)
    retrieve_during_acquisition: bool = False
    summary_batch: Positive = 16
    rerank: bool = False
    rerank_pool: Count = 10
    rewrite: bool = False
    # -- refinement (Section 3.4)
    # selective: only a successful trial's summary enters the pool (reme2's add_task_memory, which
    # ReMe's BFCL agent calls on reward 1: the service its 26cb5ca6 quickstart runs); full: every
    # trial's summary enters, failed trials and retries included (reme_ai's summary_task_memory
    # ends by inserting what it distilled; the paper's "full addition", Table 3 row 1)
    addition: Literal["selective", "full"] = reading(
        "selective", released="selective", paper="selective", reme_ai_released="full"
    )
    reflection: bool = True
    max_reflections: Count = 3
    retry_lessons: Literal["failure_analysis", "reflect"] = reading(
        "failure_analysis", released="failure_analysis", memarena="reflect"
    )
    retry_context: Literal["lessons", "experiences_and_lessons"] = reading(
        "lessons", released="lessons", memarena="experiences_and_lessons"
    )
    retry_without_lessons: Literal["retrieve", "none"] = reading(
        "retrieve", released="retrieve", memarena="none"
    )
    retry_success_adds: Literal["retry_summary", "lessons"] = reading(
        "retry_summary", released="retry_summary", paper="lessons"
    )
    # the last trial of a task that failed every trial is analysed and judged as every trial is
    # (bfcl_agent.py summarises each trial while adding is on): under selective addition its
    # lessons are then dropped (calls spent, nothing added), under full they enter the pool;
    # false: nothing is asked after the last trial (memarena's earlier reading)
    summarize_last_trial: bool = reading(True, released=True, memarena=False)
    deletion: bool = True
    delete_min_retrievals: Count = 5  # alpha
    delete_max_utility: float = 0.5  # beta
    delete_strict: bool = reading(True, released=True, paper=False)  # u/f < beta; Eq. 1: <=
    delete_every: Literal["official"] | Positive | None = reading(
        "official", released="official", memarena=None
    )
    # -- the memory LLM and what it is shown
    temperature: Annotated[float, Range(ge=0)] = 0.0
    max_tokens: Any = None
    # messages: the whole conversation in merge_messages_content's per-message layout (reasoning,
    # tool calls and results whole; the task's tools at acquisition), cut only to fit the
    # summarizer's context; steps: memarena's Step lines clipped to the two budgets below
    summary_input: Literal["messages", "steps"] = reading(
        "messages", released="messages", memarena="steps"
    )
    summary_context_tokens: Positive | None = None  # null: the backbone's context_limit, else 32768
    trajectory_chars: Positive = 6000  # summary_input: steps only
    observation_chars: Positive = 300  # summary_input: steps only
    # the experience's usage scenario / content in the summarizer's answer schema: the released
    # extraction prompts set no length; memarena's earlier caps
    scenario_chars: Positive | None = reading(None, released=None, memarena=200)
    experience_chars: Positive | None = reading(None, released=None, memarena=400)

    def resolved(self, env_name: str) -> ReMeSettings:
        """``official`` readings settled by the env's family (``appworld_smoke`` is AppWorld):
        the reward ReMe's agent ranks samples by and its deletion period."""
        family = env_family(env_name)
        changes: dict[str, Any] = {}
        if self.reward == "official":
            changes["reward"] = OFFICIAL_REWARD.get(family, "progress")
        if self.delete_every == "official":
            changes["delete_every"] = OFFICIAL_DELETE_EVERY.get(family, 5)
        return self.replace(**changes) if changes else self
