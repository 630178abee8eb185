"""The run seed varies the memory side's sampled LLM calls, and only those (issue 45 item 1).

A memory method builds its requests without a seed; :class:`memarena.core.MemoryServices`
hands it the memory backbone behind :class:`~memarena.core.memory.RunSeededLLM`, which gives
every sampling request (temperature > 0) a seed derived from the run seed and the request.
Checked on the real embedded SmolLM2 (hf engine, float32 on the CPU): sampled texts differ
between run seeds and replay exactly for one seed; greedy texts and their cache keys do not
depend on the run seed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from doubles import FakeEmbedder

from conftest import compose_cfg
from memarena.core import ChatRequest, Feedback, MemoryServices, Outcome, Step, Task, Trajectory
from memarena.core.llm_types import seeded_for_run
from memarena.llm.hf import HFBackbone

MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"
SEEDS = (0, 1, 2, 3)
SCHEMA = {
    "type": "object",
    "properties": {"insight": {"type": "string", "maxLength": 200}},
    "required": ["insight"],
}
PROMPT = [{"role": "user", "content": (
    "Why did the agent fail? It moved between rooms without picking up any ball. Answer "
    "briefly."
)}]  # fmt: skip


@pytest.fixture(scope="module")
def hf() -> HFBackbone:
    return HFBackbone(
        converted_dir=MODELS, batch_size=4, max_new_tokens=64, cache_path=None,
        device="cpu", dtype="float32",
    )  # fmt: skip


def asked(hf: HFBackbone, seeds, temperature: float) -> list[str]:
    """The texts the embedded model answers one request under each run seed, in one batch (a
    sample does not depend on what else is in the batch)."""
    request = ChatRequest(PROMPT, json_schema=SCHEMA, temperature=temperature, max_tokens=24)
    return [c.text for c in hf.generate([seeded_for_run(request, s) for s in seeds])]


def test_run_seeds_vary_sampled_memory_calls_and_replay_exactly(hf):
    sampled = asked(hf, [*SEEDS, SEEDS[1]], 0.1)
    assert len(set(sampled[:-1])) > 1, sampled  # at 0.1 the seeds draw different texts
    assert sampled[-1] == sampled[1]  # one seed replays its draw
    assert len(set(asked(hf, SEEDS[:2], 0.0))) == 1


def test_the_request_seed_depends_on_run_seed_and_request_only_when_sampling():
    base = ChatRequest(PROMPT, temperature=0.1)
    seeds = {seeded_for_run(base, s).seed for s in SEEDS}
    assert len(seeds) == len(SEEDS)
    # the method's own sample index still tells two samples of one prompt apart
    other = ChatRequest(PROMPT, temperature=0.1, seed=1)
    assert seeded_for_run(other, 0).seed != seeded_for_run(base, 0).seed
    # another prompt, another seed; the same request, the same seed in any process
    elsewhere = ChatRequest([{"role": "user", "content": "x"}], temperature=0.1)
    assert seeded_for_run(elsewhere, 0).seed != seeded_for_run(base, 0).seed
    assert seeded_for_run(base, 5) == seeded_for_run(ChatRequest(PROMPT, temperature=0.1), 5)
    greedy = ChatRequest(PROMPT, temperature=0.0)
    assert {seeded_for_run(greedy, s).cache_key("m") for s in SEEDS} == {greedy.cache_key("m")}


def failed_episode() -> tuple[Trajectory, Outcome]:
    task = Task("t0", "pddl", "train", "gripper", "Move ball1 and ball2 from rooma to roomb.")
    actions = ["pick ball1 rooma left", "move rooma roomb", "drop ball1 roomb left",
               "move roomb rooma", "pick ball3 rooma left", "move rooma roomb"]  # fmt: skip
    steps = [Step(a, f"You did: {a}.", 0.0, 0.2 * (i % 3), Feedback(True, True))
             for i, a in enumerate(actions)]  # fmt: skip
    return Trajectory(task, "ball1 and ball2 are in rooma.", steps), Outcome(
        False, 0.33, len(steps), "failure"
    )


def gmemory_state(hf: HFBackbone, seed: int, temperature: float) -> str:
    """G-Memory after one failed episode: its key steps and cause of failure come from the
    memory LLM at ``temperature`` (G-Memory's code: 0.1)."""
    from memarena.memory.gmemory import GMemory

    services = MemoryServices(llm_factory=lambda: hf, embedder_factory=FakeEmbedder, seed=seed)
    memory = GMemory(
        services=services, env_name="pddl", seed=seed, key_steps_temperature=temperature,
        memory_temperature=temperature, max_tokens={"key_steps": 8, "fail_reason": 48},
    )  # fmt: skip
    memory.observe(*failed_episode())
    state = memory.state_dict()
    return json.dumps({"queries": state["queries"], "episodes": state["episodes"]})


def test_gmemory_memory_texts_vary_with_the_run_seed_at_its_temperature(hf):
    """Through the services' :class:`RunSeededLLM`, as the pipeline builds a method."""
    at_01 = [gmemory_state(hf, s, 0.1) for s in SEEDS[:3]]
    assert len(set(at_01)) > 1  # the cause of failure / key steps drawn per run seed
    assert gmemory_state(hf, SEEDS[0], 0.0) == gmemory_state(hf, SEEDS[1], 0.0)


def test_the_pipeline_gives_the_memory_the_run_seed(tmp_path):
    from memarena.pipeline.build import build, close_parts

    cfg = compose_cfg([
        "experiment=smoke", "method=memorybank", "env=pddl", "seed=7", "logger=none",
        f"paths.results_dir={tmp_path}/results", f"paths.llm_cache={tmp_path}/cache.sqlite",
    ])  # fmt: skip
    parts = build(cfg)
    try:
        assert parts.memory.services.seed == 7
    finally:
        close_parts(parts)
