"""What the viewer shows of a step's memory, read from what the run wrote; it knows no method.

- :func:`marked`: a prompt message with its memory slots wrapped in ``<mark class="memory">``,
  at the offsets the prompt builder recorded (``Step.memory_spans``; runs recorded before that
  field get no marks and a note, :data:`NO_SPANS`).
- :func:`shown_text`: the memory text a step showed, from its recorded slots
  (``protocol.record_memory``); :func:`prompt_memory`: the memory texts in its prompt, at the
  recorded spans.
- :func:`snapshot_texts`: the text of each memory id as the run's snapshot
  (``memory/memory.json``) stores it: an object whose ``id`` / ``key`` / ``name`` is the id, or
  the value a mapping holds under the id; its text field (``text``, ``content``, ...) or its
  fields as compact JSON. Ids a method makes at retrieval time (MemCo's composed entries) are
  not in a snapshot; the step's recorded memory text is then what says what they showed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

NO_SPANS = (
    '<p class="note no-spans">This run recorded its prompts before the prompt builder recorded '
    "where the memory sits in them (<code>memory_spans</code>): the memory is not highlighted. "
    "A rerun with protocol.record_prompts=true marks it.</p>"
)
# keys whose value names an object (an id) and keys whose value is its text, in order of use
_ID_KEYS = ("id", "key", "name", "uid", "note_id")
_TEXT_KEYS = ("text", "content", "insight", "lesson", "summary", "description", "experience",
              "memory", "code", "task")  # fmt: skip
_MAX_CHARS = 600
log = logging.getLogger(__name__)


def marked(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """``text`` escaped, each ``(start, end, slot)`` span wrapped in ``<mark class="memory">``
    (spans out of range are clipped; an overlapping span is left out)."""
    out, pos = [], 0
    for start, end, slot in sorted(spans):
        start, end = max(start, pos), min(end, len(text))
        if start >= end:
            continue
        out += [
            escape(text[pos:start]),
            f'<mark class="memory" data-slot="{escape(slot)}">{escape(text[start:end])}</mark>',
        ]
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def spans_by_message(step: Mapping[str, Any]) -> dict[int, list[tuple[int, int, str]]]:
    """The step's recorded memory spans per prompt message index."""
    out: dict[int, list[tuple[int, int, str]]] = {}
    for span in step.get("memory_spans") or ():
        out.setdefault(int(span["message"]), []).append(
            (int(span["start"]), int(span["end"]), str(span.get("slot", "")))
        )
    return out


def prompt_memory(step: Mapping[str, Any]) -> list[str]:
    """The memory texts of the last prompt message that holds memory, cut at the step's
    recorded spans (a per-step memory sits in the newest user message, a per-task one in the
    first); [] when the prompt holds none or the step recorded no spans."""
    prompt = step.get("prompt") or []
    spans = spans_by_message(step)
    for index in sorted(spans, reverse=True):
        content = prompt[index].get("content") if index < len(prompt) else None
        if isinstance(content, str):
            return [content[a:b] for a, b, _ in sorted(spans[index])]
    return []


def shown_text(step: Mapping[str, Any]) -> str | None:
    """The memory text the step showed (its recorded slots, in order), None when the run did
    not record it, '' when the step showed none."""
    memory = step.get("memory")
    if memory is None:
        return None
    return "\n\n".join(str(t) for t in memory.values() if t)


def _text_of(value: Any) -> str:
    if isinstance(value, Mapping):
        for key in _TEXT_KEYS:
            if isinstance(value.get(key), str) and value[key].strip():
                return value[key]
        small = {k: v for k, v in value.items() if not _is_vector(v)}
        return json.dumps(small, ensure_ascii=False, default=str)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _is_vector(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 8
        and all(isinstance(v, int | float) for v in value[:8])
    )


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_CHARS else text[:_MAX_CHARS] + " ..."


def find_texts(state: Any, ids: Iterable[str]) -> dict[str, str]:
    """The text of each of ``ids`` found in a snapshot's JSON (see the module docstring)."""
    wanted = {str(i) for i in ids}
    found: dict[str, str] = {}
    stack = [state]
    while stack and len(found) < len(wanted):
        node = stack.pop()
        if isinstance(node, Mapping):
            for key in _ID_KEYS:
                value = node.get(key)
                if isinstance(value, str) and value in wanted and value not in found:
                    found[value] = _clip(_text_of(node))
            for key, value in node.items():
                if isinstance(key, str) and key in wanted and key not in found:
                    found[key] = _clip(_text_of(value))
                if isinstance(value, Mapping | list):
                    stack.append(value)
        elif isinstance(node, list) and not _is_vector(node):
            stack.extend(v for v in node if isinstance(v, Mapping | list))
    return found


def snapshot_texts(run_dir: Path, ids: Iterable[str]) -> dict[str, str]:
    """:func:`find_texts` over the run's ``memory/memory.json`` ({} without a snapshot or
    ids, or with an unreadable one, which is logged)."""
    ids = set(ids)
    path = Path(run_dir) / "memory" / "memory.json"
    if not ids or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("viewer: %s is unreadable (%s); memory ids are shown without text", path, exc)
        return {}
    return find_texts(data.get("state", data) if isinstance(data, Mapping) else data, ids)
