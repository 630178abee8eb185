"""The options of every config group, read from ``conf/``: the table of docs/configuration.md
(``python scripts/update_docs_options.py`` writes it between its markers; a test fails when a
file of ``conf/`` is missing from it)."""

from __future__ import annotations

from pathlib import Path

import yaml

from memarena.config_check import CONF_DIR, NESTED_GROUPS, config_groups, group_options

BEGIN = "<!-- options: generated from conf/ by scripts/update_docs_options.py -->"
END = "<!-- options: end -->"

# what each group selects (a group without a line here is still listed, with "-")
WHAT = {
    "method": "the memory method and its paper parameters",
    "ablation": "method-specific toggles (`ablation=<method>/<toggle>`)",
    "env": "the benchmark",
    "env/wiki": "Wikipedia for fever / hotpotqa",
    "backbone": "the agent's LLM",
    "memory_backbone": "the LLM a method uses for its own calls",
    "embedder": "sentence embedder for memory methods",
    "protocol": "splits, caps, concurrency, update schedule, runs, repetitions, freezing",
    "logger": "W&B (offline by default) or nothing",
    "launcher": "where multirun jobs go",
    "experiment": "one file per paper table/figure (deltas only); `experiment/base/`: what a "
    "paper's files share",
    "paths": "results, cache and log folders",
}


def defaults(conf_dir: Path) -> dict[str, str]:
    """The default choice of each group (conf/config.yaml's defaults list)."""
    body = yaml.safe_load((conf_dir / "config.yaml").read_text(encoding="utf-8"))
    out = {}
    for entry in body.get("defaults", []):
        if isinstance(entry, dict):
            for key, value in entry.items():
                key = str(key).removeprefix("optional ").removeprefix("override ")
                out[key] = str(value)
    for group in NESTED_GROUPS:  # a nested group: the parent's files that choose it
        parent, child = group.split("/", 1)
        for path in sorted((conf_dir / parent).glob("*.yaml")):
            body = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for entry in body.get("defaults", []) or []:
                if isinstance(entry, dict) and child in entry:
                    out.setdefault(group, str(entry[child]))
    return out


def options_text(conf_dir: Path, group: str) -> str:
    """The options of ``group``, comma-separated: files first, then each sub-folder as
    ``<folder>/* (<n>)``; the default marked ``(default)``."""
    chosen = defaults(conf_dir).get(group)
    flat, folders = [], {}
    for option in group_options(conf_dir, group):
        folder, _, _ = option.rpartition("/")
        if folder:
            folders[folder] = folders.get(folder, 0) + 1
        else:
            flat.append(f"{option} (default)" if option == chosen else option)
    return ", ".join([*flat, *(f"{f}/* ({n})" for f, n in folders.items())])


def options_table(conf_dir: Path = CONF_DIR) -> str:
    """The markdown table of every group (between :data:`BEGIN` and :data:`END`)."""
    lines = [BEGIN, "", "| group | what it selects | options |", "|---|---|---|"]
    for group in config_groups(conf_dir):
        if group == "local":  # your git-ignored cluster settings
            continue
        lines.append(f"| `{group}` | {WHAT.get(group, '-')} | {options_text(conf_dir, group)} |")
    return "\n".join([*lines, "", END])


def rewrite(page: Path, conf_dir: Path = CONF_DIR) -> bool:
    """Put the table in ``page`` between its markers; whether the page changed."""
    text = page.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    new = text[:start] + options_table(conf_dir) + text[end:]
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


# -- python run.py --list [group] ---------------------------------------------------------------

LINE = 90  # the width of a description in the listing


def describe(conf_dir: Path, group: str, option: str) -> str:
    """The one-line description of ``conf/<group>/<option>.yaml``: the first sentence of its
    opening comment (``# @package`` lines skipped; a full stop inside parentheses does not end
    it), cut to :data:`LINE` characters; "" when the file opens with no comment."""
    words = []
    for line in (conf_dir / group / f"{option}.yaml").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break  # the opening comment ended
        text = line.lstrip("#").strip()
        if text.startswith("@package"):
            continue
        words.extend(text.split())
    text = " ".join(words)
    depth = 0  # the first sentence ends at ". " outside parentheses ("Xu et al. 2025" is inside)
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "." and depth <= 0 and text[i + 1 : i + 2] in (" ", ""):
            text = text[: i + 1]
            break
    return text if len(text) <= LINE else text[: LINE - 3].rstrip(" ,;(") + "..."


def listing(group: str | None, conf_dir: Path = CONF_DIR) -> str:
    """``python run.py --list``: every group with what it selects and its default; with a group,
    each of its options with its one-line description, the default marked."""
    groups = [g for g in config_groups(conf_dir) if g != "local"]
    chosen = defaults(conf_dir)
    if group is None:
        width = max(map(len, groups))
        rows = [f"{g:<{width}}  {WHAT.get(g, '-')} (default: {chosen.get(g, '-')})"
                for g in groups]  # fmt: skip
        return "\n".join(["config groups (python run.py --list <group> lists its options):", *rows])
    group = group.replace(".", "/")
    if group not in groups:
        raise ValueError(f"no config group {group!r}; the groups are: {', '.join(groups)}")
    options = group_options(conf_dir, group)
    width = max(len(o) for o in options) + len(" (default)")
    rows = []
    for option in options:
        name = f"{option} (default)" if option == chosen.get(group) else option
        rows.append(f"{name:<{width}}  {describe(conf_dir, group, option)}".rstrip())
    head = f"{group}: {WHAT.get(group, '-')}; choose one with {group}=<option>"
    return "\n".join([head, *rows])
