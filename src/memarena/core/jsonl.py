"""Reading JSON Lines as they were written: one record per ``\\n``-terminated line.

Every writer here uses ``json.dumps(..., ensure_ascii=False)``, which escapes ``\\n`` and
``\\r`` inside strings but leaves U+2028, U+2029, U+0085 (and U+000B/U+000C, U+001C-U+001E)
raw. ``str.splitlines()`` splits on all of those, so a record whose text holds one (a FEVER
claim, a HotpotQA question, a model's answer) would be read as two broken halves. Every JSONL
reader in memarena goes through :func:`lines` / :func:`numbered_lines` / :func:`read_jsonl`,
which split on ``\\n`` alone (a ``\\r`` before it is JSON whitespace and harmless).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, AnyStr

from memarena.core.errors import ConfigError


def lines(data: AnyStr, *, keepends: bool = False) -> list[AnyStr]:
    """``data`` (text or bytes) split at ``\\n`` only; no empty piece after a final newline.
    With ``keepends`` each piece keeps its ``\\n`` (the last one lacks it when the data does
    not end with a newline: a torn write)."""
    nl: Any = "\n" if isinstance(data, str) else b"\n"
    parts = data.split(nl)
    last = parts.pop()
    if keepends:
        parts = [p + nl for p in parts]
    if last:
        parts.append(last)
    return parts


def numbered_lines(data: AnyStr) -> Iterator[tuple[int, AnyStr]]:
    """(1-based line number, line) for each non-blank line of ``data``, split at ``\\n``."""
    for lineno, line in enumerate(lines(data), 1):
        if line.strip():
            yield lineno, line


def read_jsonl(path: str | Path, *, hint: str = "") -> list[Any]:
    """The JSON values of the non-blank lines of the UTF-8 file ``path``, split at ``\\n``.
    A line that is not JSON stops with a ConfigError naming the file and the line (``hint``
    appended: what a line of this file should be)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    out = []
    for lineno, line in numbered_lines(text):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"memarena: {path}, line {lineno} is not valid JSON ({err.msg} at column "
                f"{err.colno}).{' ' + hint if hint else ''}"
            ) from None
    return out
