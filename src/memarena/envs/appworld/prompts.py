"""The AppWorld ReAct code agent's prompt, in two styles (``env.prompt_style``).

``official_structure`` (the default): memarena's own wording of the prompt ReMe's AppWorld agent
runs (``NEW_PROMPT_TEMPLATE`` in ReMe's ``benchmark/appworld/prompt.py``), with its content in
its order: the supervisor's request to work autonomously through a Python REPL, the three
api_docs calls, a worked example that explores the docs step by step (Spotify playlists: list
the APIs, read a spec, find the password in the supervisor app, log in, page through a library,
``complete_task``), the key rules, and the hand-over naming the supervisor. All of it is one
system message, filled per task (the supervisor, the apps); the instruction alone comes in the
first user message, as in ReMe's agent.

``short``: memarena's earlier condensed prompt (the apps, the api_docs calls, AppWorld's longer
rule list in brief) with one worked example shown before the task (``env.fewshot``).

Placeholders, filled by :func:`system_for`: ``${apps}`` (AppWorld's app descriptions, JSON),
``${first_name}``, ``${last_name}``, ``${email}``, ``${phone_number}`` (the task's supervisor).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from string import Template

PROMPT_STYLES = ("official_structure", "short")
SUPERVISOR_FIELDS = ("first_name", "last_name", "email", "phone_number")
UNKNOWN = "(unknown)"

# -- official_structure -------------------------------------------------------------------------
# Section headings (tests and the notebook name them).
SECTION_DOCS = "## Finding apps and APIs"
SECTION_EXAMPLE = "## A worked example"
SECTION_RULES = "## Key rules"
SECTION_TASK = "## The actual task"

WHO = (
    "My name is: ${first_name} ${last_name}. My personal email is ${email} and my phone number "
    "is ${phone_number}."
)

INTRO = """USER:
I am your supervisor. You are a very capable AI assistant, and your job is to get my \
day-to-day tasks done entirely on your own.

You do that by operating apps (spotify, venmo, gmail and others) through their APIs on my \
behalf, in a conversation of several steps with a Python REPL: you write Python code, the \
environment runs it and shows you what it printed, you write the code for the next step from \
that, and so on until the task is achieved."""

DOCS = (
    SECTION_DOCS
    + """
Everything else you need to know comes from three calls of the api_docs app.

# Which apps you can use:
```python
print(apis.api_docs.show_app_descriptions())
```

# Which APIs an app offers, e.g. spotify:
```python
print(apis.api_docs.show_api_descriptions(app_name='spotify'))
```

# The full specification of one API (its arguments and what it returns), e.g. spotify's login:
```python
print(apis.api_docs.show_api_doc(app_name='spotify', api_name='login'))
```

What one execution prints is there for you to use in the following steps. With these calls \
you can write the code that I will run to do the task."""
)

EXAMPLE = (
    SECTION_EXAMPLE
    + """
Here is how a task goes, one step at a time.

"""
    + WHO
    + """
Task: How many playlists do I have in Spotify?

ASSISTANT:
I'll start by listing what the Spotify app offers.
Code:
```python
print(apis.api_docs.show_api_descriptions(app_name='spotify'))
```

USER:
Output:
```
[
 ...
 "login : Login to your account.",
 ...
 "show_playlist_library : Get a list of playlists in the user's playlist library.",
 ...
]
```

ASSISTANT:
I have to log in first. Let me read what `login` expects.
Code:
```python
print(apis.api_docs.show_api_doc(app_name='spotify', api_name='login'))
```

USER:
Output:
```
{
 "app_name": "spotify",
 "api_name": "login",
 "method": "POST",
 "description": "Login to your account.",
 "parameters": [
  {"name": "username", "type": "string", "required": true, "description": "Your account email."},
  {"name": "password", "type": "string", "required": true, "description": "Your account password."}
 ],
 "response_schemas": {
  "success": {"token_type": "string", "access_token": "string"},
  "failure": {"message": "string"}
 }
}
```

ASSISTANT:
It needs my username and password. Which app could give me the password?
Code:
```python
print(apis.api_docs.show_app_descriptions())
```

USER:
Output:
```
${apps}
```

ASSISTANT:
The supervisor app keeps account credentials. Let me list its APIs.
Code:
```python
print(apis.api_docs.show_api_descriptions(app_name='supervisor'))
```

USER:
Output:
```
[
 ...
 "show_account_passwords : Show your supervisor's account passwords.",
 ...
]
```

ASSISTANT:
`show_account_passwords` is the one. I'll keep its result in a variable for later steps.
Code:
```python
passwords = apis.supervisor.show_account_passwords()
print(passwords)
```

USER:
Output:
```
[
 {"account_name": "spotify", "password": "example_spotify_password"},
 {"account_name": "file_system", "password": "example_file_system_password"}
]
```

ASSISTANT:
I'll log in with the Spotify password and my email, ${email}.
Code:
```python
spotify_password = next(p["password"] for p in passwords if p["account_name"] == "spotify")
login = apis.spotify.login(username='${email}', password=spotify_password)
spotify_access_token = login["access_token"]
print(login)
```

USER:
Output:
```
{"token_type": "Bearer", "access_token": "example_access_token"}
```

ASSISTANT:
Logged in. Now the specification of `show_playlist_library`.
Code:
```python
print(apis.api_docs.show_api_doc(app_name='spotify', api_name='show_playlist_library'))
```

USER:
Output:
```
{
 "app_name": "spotify",
 "api_name": "show_playlist_library",
 "method": "GET",
 "description": "Get a list of playlists in the user's playlist library.",
 "parameters": [
  {"name": "access_token", "type": "string", "required": true,
   "description": "Access token obtained from spotify app login."},
  {"name": "page_index", "type": "integer", "required": false, "default": 0,
   "description": "The index of the page to retrieve."},
  {"name": "page_limit", "type": "integer", "required": false, "default": 5,
   "constraints": ["value >= 1.0, <= 20.0"],
   "description": "The maximum number of results to return per page."},
  {"name": "is_public", "type": "boolean", "required": false, "default": null,
   "description": "Whether to show public playlists or private playlists."}
 ],
 "response_schema": [
  {"playlist_id": 1, "title": "string", "is_public": true, "song_ids": [1], "...": "..."}
 ]
}
```

ASSISTANT:
The results come in pages, so I'll go through them until a page comes back empty.
Code:
```python
playlists = []
page_index = 0
while True:
    page = apis.spotify.show_playlist_library(
        access_token=spotify_access_token, page_index=page_index, page_limit=20
    )
    if not page:
        break
    playlists.extend(page)
    page_index += 1
num_playlists = len(playlists)
print(num_playlists)
```

USER:
Output:
```
23
```

ASSISTANT:
That is the answer. The task asked for information, so I pass it to complete_task.
Code:
```python
apis.supervisor.complete_task(answer=num_playlists)
```

USER:
Output:
```
Marked the active task complete.
```"""
)

NO_EXAMPLE = "The apps (what apis.api_docs.show_app_descriptions() prints):\n${apps}"

RULES = (
    SECTION_RULES
    + """
1. End every code block with ``` followed by a newline.
2. Variables you define stay available in the code blocks that follow.
3. The passwords, access tokens and variables in the example (such as spotify_password) were \
made up for it and are not valid: get the real ones by calling the APIs yourself.
4. The "supervisor" app holds my account information (passwords, addresses, payment cards); \
the "phone" app holds what you need about my friends, family and other contacts.
5. Read an API's specification with apis.api_docs.show_api_doc before you call it.
6. Write small pieces of code, one piece per step, and check that each one works before you \
make any change that cannot be undone.
7. Many APIs return their results in "pages": loop over page_index until every page is read.
8. When the task is done, call apis.supervisor.complete_task(). If the task asked for some \
information, give it as the answer: apis.supervisor.complete_task(answer=<answer>). Many tasks \
need no answer; then call apis.supervisor.complete_task() without any argument."""
)

HANDOVER = (
    "USER:\n"
    + SECTION_TASK
    + """
Now use these APIs to write the code for the actual task, which comes in the next message.

"""
    + WHO
)

SEPARATOR = "\n\n" + "-" * 46 + "\n\n"

ACTION_FORMAT = (
    "Reply with a short thought, then `Code:` and exactly one ```python ... ``` block that ends "
    "with ``` and a newline; only the first Python block of a reply runs."
)


def official_template(fewshot: int = 1) -> str:
    """The ``official_structure`` system prompt before filling: the worked example sits
    between the api_docs calls and the rules (``fewshot=0``: only the app list there)."""
    middle = EXAMPLE if fewshot else NO_EXAMPLE
    return f"{INTRO}\n\n{DOCS}\n\n{middle}{SEPARATOR}USER:\n{RULES}\n\n{HANDOVER}\n"


# -- short (memarena's earlier condensed prompt) -------------------------------------------------
SHORT_SYSTEM = """You are an autonomous AI assistant that completes day-to-day tasks for your \
supervisor by operating apps (spotify, venmo, gmail, ...) through their APIs. You work in a \
Python REPL: each reply gives one block of Python code, the environment runs it and shows you \
what it printed, and you continue from there until the task is done.

Your supervisor: ${first_name} ${last_name}, email ${email}, phone number ${phone_number}.

The apps available:
${apps}

Look up what you need with the API documentation app:
```python
print(apis.api_docs.show_app_descriptions())
print(apis.api_docs.show_api_descriptions(app_name='supervisor'))
print(apis.api_docs.show_api_doc(app_name='supervisor', api_name='show_account_passwords'))
```

Rules:
1. Get every fact (emails, passwords, tokens, dates) by calling APIs; never guess.
2. Variables persist between your code blocks. Write small steps; check outputs before any \
irreversible change.
3. Only the Python standard library is available; OS, file-system and process functions are \
disabled. A "file system" in a task means the file_system app.
4. Follow the API docs for arguments and response schemas; go through every page of paged APIs.
5. Take the current date and time from Python's datetime or the phone app; time ranges are \
whole days (00:00:00 to 23:59:59), in one time zone.
6. Friends, family and other people are the contacts in the phone app. The supervisor's \
personal details, account passwords, addresses and payment cards are in the supervisor app.
7. When done, call apis.supervisor.complete_task(answer=<answer>) for a question (just the \
entity or number, digits not words) or apis.supervisor.complete_task() otherwise; \
status="fail" if you cannot do it. Decide everything yourself; never ask for confirmation."""

SHORT_ACTION_FORMAT = (
    "Reply with your reasoning as Python comments inside exactly one ```python ... ``` block; "
    "the first Python block of a reply is executed."
)

SHORT_FEWSHOT = """Task: What is the password for my Spotify account?
```python
# the supervisor app keeps account passwords
print(apis.api_docs.show_api_doc(app_name='supervisor', api_name='show_account_passwords'))
```
Output:
```
{"app_name": "supervisor", "api_name": "show_account_passwords", "parameters": [], ...}
```
```python
passwords = apis.supervisor.show_account_passwords()
spotify_password = [p for p in passwords if p["account_name"] == "spotify"][0]["password"]
apis.supervisor.complete_task(answer=spotify_password)
```
Output:
```
Execution successful.
```"""


# -- filling --------------------------------------------------------------------------------------
def render_apps(descriptions: Mapping[str, str]) -> str:
    """The app list as ``show_app_descriptions`` prints it (ReMe's agent renders AppWorld's
    ``task.app_descriptions`` the same way)."""
    items = [{"name": k, "description": v} for k, v in descriptions.items()]
    return json.dumps(items, indent=1) if items else "(see apis.api_docs.show_app_descriptions())"


def supervisor_fields(supervisor: Mapping[str, object] | None) -> dict[str, str]:
    """The four supervisor facts the prompt names (a missing one points at the supervisor app)."""
    supervisor = supervisor or {}
    return {k: str(supervisor.get(k) or UNKNOWN) for k in SUPERVISOR_FIELDS}


def system_for(
    descriptions: Mapping[str, str],
    supervisor: Mapping[str, object] | None = None,
    *,
    style: str = "official_structure",
    fewshot: int = 1,
) -> str:
    """The system prompt of ``style`` with the apps and the supervisor filled in."""
    template = official_template(fewshot) if style == "official_structure" else SHORT_SYSTEM
    return Template(template).substitute(apps=render_apps(descriptions),
                                         **supervisor_fields(supervisor))  # fmt: skip


START = "The Python REPL is ready; no code has run yet."


def output_text(output: str) -> str:
    """An execution's output as the agent sees it (ReMe's AppWorld agent)."""
    return "Output:\n```\n" + output.rstrip("\n") + "\n```"
