"""Build a small offline AppWorld root for smoke runs (run with the AppWorld venv's python).

AppWorld's task data is a download; this builds a root in its format from what the package
itself holds, so the real environment server can run tasks end to end offline:

- ``data/api_docs/standard/<app>.json``: the package's ``appworld.api_docs.prepare_api_docs``;
- ``data/tasks/<id>/dbs/<app>.db``: empty app databases created by the package's
  ``ModelCollection.load(..., create_db=True)``, plus the supervisor's rows (admin ``main_users``;
  supervisor ``supervisors`` and the active ``tasks`` row, status NULL);
- ``data/tasks/<id>/specs.json`` and ``ground_truth/`` (metadata, answer, test_data, an
  ``evaluation.py`` with two tests: the answer matches and the task is marked completed, and a
  ``solution.py`` / ``compiled_solution.py`` defining ``solution(apis, requester)``);
- ``data/datasets/{train,dev,test_normal,test_challenge}.txt``.

The six tasks are questions about the supervisor answered with ``apis.supervisor`` (a pipeline
check, not AppWorld's benchmark: results go under ``appworld_smoke``). Imports nothing from
memarena but its standard-library ``core/cache_build.py``, loaded by path: several jobs starting
at once build the root once (locked, in a private folder renamed into place), and a root that
does not verify against its manifest is rebuilt.

    .venv-appworld/bin/python smoke_root.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys

SUPERVISOR = {
    "first_name": "Ada",
    "last_name": "Lovelace",
    "email": "ada.lovelace@example.com",
    "phone_number": "5550101010",
}
BIRTHDAY = "1990-12-10"
PROFILE = "    profile = apis.supervisor.show_profile()\n"
# (task id, split, instruction, answer, body of solution(apis, requester))
TASKS = [
    ("smk001_1", "train", "What is 6 times 7?", 42,
     "    apis.supervisor.complete_task(answer=6 * 7)\n"),
    ("smk001_2", "train", "What is my email address?", SUPERVISOR["email"],
     PROFILE + "    apis.supervisor.complete_task(answer=profile['email'])\n"),
    ("smk002_1", "dev", "What is my phone number?", SUPERVISOR["phone_number"],
     PROFILE + "    apis.supervisor.complete_task(answer=profile['phone_number'])\n"),
    ("smk003_1", "test_normal", "How many letters are in my first name?", 3,
     PROFILE + "    apis.supervisor.complete_task(answer=len(profile['first_name']))\n"),
    ("smk003_2", "test_normal", "In which year was I born?", 1990,
     PROFILE + "    apis.supervisor.complete_task(answer=int(profile['birthday'][:4]))\n"),
    ("smk004_1", "test_challenge", "What is my last name?", SUPERVISOR["last_name"],
     PROFILE + "    apis.supervisor.complete_task(answer=profile['last_name'])\n"),
]  # fmt: skip
EVALUATION = '''def evaluate(test, public_data, private_data, main_user, models,
             ground_truth_answer):
    task = models.end.supervisor.Task.find_one(id=1)
    with test("""the answer matches."""):
        test.answer(task.answer, ground_truth_answer)
    with test("""the task is marked completed."""):
        test.case(task.status, "==", "success")
'''
REQUIREMENTS = ["the answer matches.", "the task is marked completed."]


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def build(out: str) -> None:
    from appworld import update_root

    update_root(out)
    from appworld.api_docs import prepare_api_docs
    from appworld.apps import get_all_apps
    from appworld.collections.models import ModelCollection
    from appworld.common.constants import DB_VERSION

    data = os.path.join(out, "data")
    for app in get_all_apps():
        docs = {d["api_name"]: {**d, "canary_string": ""} for d in prepare_api_docs(app)}
        path = os.path.join(data, "api_docs", "standard", f"{app}.json")
        write(path, json.dumps(docs, default=str))
    splits: dict[str, list[str]] = {}
    for task_id, split, instruction, answer, body in TASKS:
        splits.setdefault(split, []).append(task_id)
        task = os.path.join(data, "tasks", task_id)
        dbs = os.path.join(task, "dbs")
        os.makedirs(dbs, exist_ok=True)
        collection = ModelCollection.load(
            from_db_home_path=dbs, load_apps=get_all_apps(), create_db=True
        )
        collection.close()
        person = (*SUPERVISOR.values(), BIRTHDAY, "female")
        columns = "first_name, last_name, email, phone_number, birthday, sex"
        for app, table in (("admin", "main_users"), ("supervisor", "supervisors")):
            with sqlite3.connect(os.path.join(dbs, f"{app}.db")) as db:
                db.execute(f"INSERT INTO {table} ({columns}) VALUES (?, ?, ?, ?, ?, ?)", person)
                if app == "supervisor":  # the active task: status NULL until complete_task
                    insert = "INSERT INTO tasks (supervisor_id, instruction, answer) VALUES (1,?,?)"
                    db.execute(insert, (instruction, "null"))
        specs = {"instruction": instruction, "supervisor": SUPERVISOR,
                 "datetime": "2023-05-18T12:00:00", "db_version": DB_VERSION}  # fmt: skip
        write(os.path.join(task, "specs.json"), json.dumps(specs, indent=1))
        truth = os.path.join(task, "ground_truth")
        solution = "def solution(apis, requester):\n" + body
        metadata = {"difficulty": 1, "mode": "full", "num_apps": 1, "num_apis": 2,
                    "num_solution_code_lines": solution.count("\n")}  # fmt: skip
        files = {
            "metadata.json": json.dumps(metadata),
            "public_data.json": "{}",
            "private_data.json": "{}",
            "answer.json": json.dumps(answer),
            "required_apps.json": json.dumps(["supervisor"]),
            "test_data.json": json.dumps(
                [{"requirement": r, "label": "no_op_fail"} for r in REQUIREMENTS]
            ),
            "evaluation.py": EVALUATION,
            "solution.py": solution,
            "compiled_solution.py": solution,
        }
        for name, text in files.items():
            write(os.path.join(truth, name), text)
    for split in ("train", "dev", "test_normal", "test_challenge"):
        ids = "\n".join(splits.get(split, []))
        write(os.path.join(data, "datasets", f"{split}.txt"), ids + "\n")
    write(os.path.join(data, ".memarena_smoke"), "built by memarena smoke_root.py\n")


def cache_build():
    """memarena's ``core/cache_build.py`` (standard library only), loaded by path: this script
    runs in AppWorld's venv, where memarena is not installed."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, os.pardir, os.pardir, "core", "cache_build.py")
    spec = importlib.util.spec_from_file_location("memarena_cache_build", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    cb = cache_build()

    def check(folder) -> None:
        marker = os.path.join(folder, "data", ".memarena_smoke")
        if not os.path.isfile(marker):
            raise cb.CacheInvalid(f"{marker} is missing")

    # several jobs may start at once: one builds (locked, private folder renamed into place),
    # the others wait and reuse it; a root that does not verify is rebuilt
    cb.build_once(out, lambda tmp: build(str(tmp)), what="the AppWorld smoke root", check=check)
    print(f"AppWorld smoke root: {out} ({len(TASKS)} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
