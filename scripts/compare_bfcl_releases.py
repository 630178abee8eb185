"""Compare a gorilla checkout's BFCL v3 multi-turn data and checker with the installed
``bfcl-eval`` (memarena's 2025.8.6), task by task and file by file.

ReMe's BFCL runs used gorilla at commit ea13468 (its ``benchmark/bfcl/quickstart.md``); memarena
uses the ``bfcl-eval==2025.8.6`` wheel. This says whether the two differ where a run's score
depends on them:

- per task of each category (default: multi_turn_base): the user turns (``question``),
  ``initial_config``, ``involved_classes``, ``missed_function`` and the ground truth
  (``possible_answer``); ids present in only one of the two;
- the function documents of the multi-turn API classes (``multi_turn_func_doc``);
- the checker's code: ``eval_checker/multi_turn_eval`` (``multi_turn_checker.py``,
  ``multi_turn_utils.py``, the API classes in ``func_source_code/``), with the number of
  changed lines per file (``--diff`` prints the unified diffs);
- for context, every other ``.py`` file of the two packages (identical or not, no diffs).

    git -C <gorilla clone> archive ea13468 berkeley-function-call-leaderboard/bfcl_eval \\
        | tar -x -C /tmp/gorilla_ea13468
    python scripts/compare_bfcl_releases.py /tmp/gorilla_ea13468
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
from pathlib import Path
from typing import Any

from memarena.core.jsonl import read_jsonl

FIELDS = ("question", "initial_config", "involved_classes", "missed_function")
CHECKER = Path("eval_checker") / "multi_turn_eval"


def find_package(root: Path) -> Path:
    """The ``bfcl_eval`` folder under ``root`` (itself, or one or two levels down)."""
    for candidate in (
        root,
        root / "bfcl_eval",
        root / "berkeley-function-call-leaderboard" / "bfcl_eval",
    ):
        if (candidate / "data").is_dir() and (candidate / CHECKER).is_dir():
            return candidate
    raise SystemExit(f"{root}: no bfcl_eval folder (with data/ and {CHECKER}/) found")


def installed_package() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.origin:
        raise SystemExit("bfcl_eval is not installed in this environment")
    return Path(spec.origin).parent


def json_lines(path: Path) -> dict[str, dict[str, Any]]:
    rows = read_jsonl(path)
    return {row["id"]: row for row in rows}


def compare_category(ref: Path, ours: Path, category: str) -> list[str]:
    name = f"BFCL_v3_{category}.json"
    tasks = [json_lines(p / "data" / name) for p in (ref, ours)]
    answers = [json_lines(p / "data" / "possible_answer" / name) for p in (ref, ours)]
    common = sorted(set(tasks[0]) & set(tasks[1]), key=lambda i: int(i.rsplit("_", 1)[1]))
    lines = [
        f"{category}: {len(tasks[0])} tasks in the reference, {len(tasks[1])} installed, "
        f"{len(common)} in both",
    ]
    for label, a, b in (("reference", tasks[0], tasks[1]), ("installed", tasks[1], tasks[0])):
        only = sorted(set(a) - set(b))
        if only:
            lines.append(f"  only in the {label}: {only}")
    for field in FIELDS:
        differ = [i for i in common if tasks[0][i].get(field) != tasks[1][i].get(field)]
        lines.append(f"  {field}: {len(differ)} tasks differ{_ids(differ)}")
    differ = [
        i for i in common if answers[0].get(i, {}).get("ground_truth")
        != answers[1].get(i, {}).get("ground_truth")
    ]  # fmt: skip
    lines.append(f"  ground_truth (possible_answer): {len(differ)} tasks differ{_ids(differ)}")
    other = sorted({k for i in common for k in (*tasks[0][i], *tasks[1][i])} - {"id", *FIELDS})
    for key in other:
        differ = [i for i in common if tasks[0][i].get(key) != tasks[1][i].get(key)]
        lines.append(f"  {key}: {len(differ)} tasks differ{_ids(differ)}")
    return lines


def _ids(ids: list[str], shown: int = 10) -> str:
    if not ids:
        return ""
    more = f", ... ({len(ids) - shown} more)" if len(ids) > shown else ""
    return f" ({', '.join(ids[:shown])}{more})"


def compare_files(ref: Path, ours: Path, folder: Path, pattern: str, diff: bool) -> list[str]:
    """Files matching ``pattern`` under ``folder`` of both packages: identical, changed (with
    +/- line counts) or present in one only."""
    found = {p.relative_to(r / folder) for r in (ref, ours) for p in (r / folder).rglob(pattern)}
    names = sorted(found - {Path("__init__.py")})
    lines, same = [], 0
    for name in names:
        a, b = ref / folder / name, ours / folder / name
        if not a.is_file() or not b.is_file():
            lines.append(f"  {folder / name}: only {'installed' if b.is_file() else 'reference'}")
            continue
        old = a.read_text(encoding="utf-8").splitlines()
        new = b.read_text(encoding="utf-8").splitlines()
        if old == new:
            same += 1
            continue
        delta = list(difflib.unified_diff(old, new, str(a), str(b), lineterm=""))
        plus = sum(1 for d in delta if d.startswith("+") and not d.startswith("+++"))
        minus = sum(1 for d in delta if d.startswith("-") and not d.startswith("---"))
        lines.append(f"  {folder / name}: differs (+{plus} / -{minus} lines)")
        if diff:
            lines.extend("    " + d for d in delta)
    lines.insert(0, f"{folder}/{pattern}: {len(names)} files, {same} identical")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="gorilla export (holding bfcl_eval/)")
    parser.add_argument("--categories", nargs="+", default=["multi_turn_base"])
    parser.add_argument("--diff", action="store_true", help="print the unified diffs of code")
    args = parser.parse_args()
    ref, ours = find_package(args.reference), installed_package()
    version = "?"
    try:
        from importlib.metadata import version as dist_version

        version = dist_version("bfcl-eval")
    except Exception:  # noqa: BLE001 - the version is only shown
        pass
    print(f"reference: {ref}\ninstalled: {ours} (bfcl-eval {version})")
    for category in args.categories:
        print("\n".join(compare_category(ref, ours, category)))
    print("\n".join(compare_files(ref, ours, Path("data/multi_turn_func_doc"), "*.json", False)))
    print("\n".join(compare_files(ref, ours, CHECKER, "*.py", args.diff)))
    rest = compare_files(ref, ours, Path("."), "*.py", False)
    rest = [line for line in rest if not line.strip().startswith(str(CHECKER))]
    print("all of bfcl_eval (checker included): " + rest[0].split(": ", 1)[1])
    print("\n".join(rest[1:]))


if __name__ == "__main__":
    main()
