"""AppWorld's retrieval query and agent prompt as ReMe's AppWorld agent has them
(benchmark/appworld/appworld_react_agent.py, prompt.py at ReMe 26cb5ca6).

No AppWorld venv needed: the env reads a two-file data root (datasets/<split>.txt and the task's
specs.json), and a stand-in python file passes the venv check (the app descriptions then fall
back to a pointer at the api_docs app).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memarena.core.errors import ConfigError
from memarena.core.types import MemoryQuery, Observation
from memarena.envs.appworld import AppWorldEnv
from memarena.envs.appworld.prompts import (
    PROMPT_STYLES,
    SECTION_DOCS,
    SECTION_EXAMPLE,
    SECTION_RULES,
    SECTION_TASK,
    START,
    system_for,
)

INSTRUCTION = "How many playlists do I have in Spotify that have more than 10 songs?"
SUPERVISOR = {
    "first_name": "Grace",
    "last_name": "Hopper",
    "email": "grace.hopper@example.com",
    "phone_number": "5550202020",
}
APPS = {
    "api_docs": "An app to search and explore API documentation.",
    "supervisor": "An app to access supervisor's personal information.",
    "spotify": "A music streaming app.",
}


@pytest.fixture
def env(tmp_path: Path) -> AppWorldEnv:
    data = tmp_path / "root" / "data"
    (data / "datasets").mkdir(parents=True)
    (data / "datasets" / "test_normal.txt").write_text("abc123_1\n")
    task = data / "tasks" / "abc123_1"
    task.mkdir(parents=True)
    specs = {"instruction": INSTRUCTION, "supervisor": {**SUPERVISOR, "birthday": "1906-12-09"}}
    (task / "specs.json").write_text(json.dumps(specs))
    python = tmp_path / "python"
    python.write_text("")  # not executable: no app descriptions, the rest works
    return AppWorldEnv(python=str(python), root=str(tmp_path / "root"))


def test_the_retrieval_query_is_the_instruction_without_the_supervisor(env):
    (task,) = env.tasks("test")
    assert task.goal == INSTRUCTION
    for fact in SUPERVISOR.values():
        assert fact not in task.goal
    # what a memory method is asked with (the runner's MemoryQuery); ReMe's method embeds
    # query.task.goal, as ReMe's agent retrieves by world.task.instruction
    query = MemoryQuery(task=task, observation=Observation(START, task.goal))
    assert query.task.goal == INSTRUCTION and query.observation.goal == INSTRUCTION
    assert "Grace" not in query.observation.text
    # the supervisor travels in the payload (the four facts the prompt names) ...
    assert task.payload["supervisor"] == SUPERVISOR
    assert task.payload["instruction"] == INSTRUCTION


def test_the_default_prompt_has_the_official_structure_filled_for_the_task(env):
    (task,) = env.tasks("test")
    prompt = env.prompt(task)
    system = prompt.system
    # ... and into the system prompt, as ReMe's template renders it
    assert env.prompt_style == "official_structure"
    for fact in SUPERVISOR.values():
        assert fact in system
    assert f"username='{SUPERVISOR['email']}'" in system  # the worked example logs in as them
    # the sections, in the official order: api_docs calls, worked example, rules, hand-over
    at = [system.index(s) for s in (SECTION_DOCS, SECTION_EXAMPLE, SECTION_RULES, SECTION_TASK)]
    assert at == sorted(at)
    # the three api_docs calls and the workflow the example walks through
    for call in ("apis.api_docs.show_app_descriptions()",
                 "apis.api_docs.show_api_descriptions(app_name='spotify')",
                 "apis.api_docs.show_api_doc(app_name='spotify', api_name='login')",
                 "apis.supervisor.show_account_passwords()",
                 "apis.spotify.login(",
                 "page_index",
                 "apis.supervisor.complete_task(answer=num_playlists)"):  # fmt: skip
        assert call in system, call
    rules = system[system.index(SECTION_RULES) : system.index(SECTION_TASK)]
    assert [int(n) for n in re.findall(r"^(\d+)\. ", rules, re.M)] == list(range(1, 9))
    for topic in ("supervisor", "phone", "show_api_doc", "pages", "complete_task(answer=<answer>)",
                  "without any argument", "not valid"):  # fmt: skip
        assert topic in rules, topic
    # every placeholder filled; the instruction is not in the system prompt (it is the task)
    assert "${" not in system and "$" not in system
    assert INSTRUCTION not in system
    assert system.rstrip().endswith(f"phone number is {SUPERVISOR['phone_number']}.")
    # the example lives in the system prompt; none is added before the task
    assert prompt.examples() == [] and "Code:" in prompt.action_format


def test_the_app_list_fills_the_example_and_fewshot_zero_drops_the_example():
    with_example = system_for(APPS, SUPERVISOR)
    apps_json = json.dumps([{"name": k, "description": v} for k, v in APPS.items()], indent=1)
    assert f"Output:\n```\n{apps_json}\n```" in with_example
    bare = system_for(APPS, SUPERVISOR, fewshot=0)
    assert SECTION_EXAMPLE not in bare and apps_json in bare and SECTION_RULES in bare
    assert "${" not in bare


def test_the_short_prompt_stays_selectable(env, tmp_path):
    short = AppWorldEnv(python=env.python, root=env.root, prompt_style="short")
    (task,) = short.tasks("test")
    prompt = short.prompt(task)
    assert SUPERVISOR["email"] in prompt.system and "${" not in prompt.system
    assert SECTION_RULES not in prompt.system
    assert len(prompt.examples()) == 1 and task.goal == INSTRUCTION
    assert set(PROMPT_STYLES) == {"official_structure", "short"}
    with pytest.raises(ConfigError, match="prompt_style"):
        AppWorldEnv(python=env.python, root=env.root, prompt_style="verbatim")
