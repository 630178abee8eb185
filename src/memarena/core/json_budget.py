"""Reply budgets of JSON-schema constrained requests: the longest valid answer, in tokens.

A memory method asks for JSON answers whose strings and lists are bounded by their schema
(``maxLength``, ``maxItems``, closed objects). The engines decode that JSON compactly (hf:
llguidance without whitespace between tokens) and stop as soon as the top-level value closes,
so a request's ``max_tokens`` only has to cover the longest *valid* answer: with
:func:`answer_tokens` as ``max_tokens`` no valid answer is ever cut short, and a larger number
buys nothing.

:func:`answer_chars` is the length, in characters, of the longest compact JSON document the
schema admits (no whitespace; ``,`` and ``:`` as separators):

- a string: its ``maxLength`` plus the two quotes (``enum`` / ``const``: the longest value as
  JSON);
- an array: ``maxItems`` of its longest item, the commas and the brackets;
- an object: every property present (the optional ones too), each as ``"key":value``, the
  commas and the braces; it must be closed (``additionalProperties: false``), since an open
  object admits any number of extra keys;
- an integer: the longest decimal form within ``minimum`` / ``maximum`` (exclusive bounds
  too); a missing bound stands for the int64 limit (:data:`INT64`);
- a number: the longest integer part within its bounds (int64 limits when unbounded), a point
  and :data:`FRACTION_DIGITS` digits (the 17 significant digits that print any float64, e.g.
  ``0.30000000000000004``). This is a stated width, not a grammar bound: the decoders accept
  any number of fraction digits, and an answer that writes more is cut (a counted fallback);
- a boolean: ``false``; null: ``null``; ``anyOf`` / ``oneOf`` / a list of types: the longest
  branch.

:func:`answer_tokens` turns that into tokens under ONE ASSUMPTION: every generated token
decodes to at least one character of the answer, so tokens <= characters; plus one for the
end-of-sequence token the engine samples (or forces) after the closing brace. The assumption
holds for the byte-pair vocabularies of the models here on ASCII text, which is what these
prompts ask for; it can fail by a small factor for answers full of JSON escapes (``\\n``
prints as two characters, but counts once against ``maxLength``) or of non-ASCII characters
that a byte-level tokenizer splits into several byte tokens. English text averages three to
four characters per token, so real answers use a fraction of the bound.

A schema with an unbounded part (a string without ``maxLength``, an array without
``maxItems``, an open object, a value of any type) has no finite bound:
:class:`UnboundedSchemaError` names the path of that part, and the method bounds it in its
schema. :func:`reply_tokens` is what a request asks for: the bound, or a user's smaller cap.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from memarena.core.errors import ConfigError

INT64 = (-(2**63), 2**63 - 1)  # the range an integer or number without a bound stands for
FRACTION_DIGITS = 17  # fraction digits counted for a number (float64's significant digits)
EOS_TOKENS = 1  # the end-of-sequence token after the closing brace

_SCALARS = {"boolean": len("false"), "null": len("null")}


class UnboundedSchemaError(ValueError):
    """A JSON schema whose answers have no length bound; ``path`` names the unbounded part."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"JSON schema has no finite answer length at {path}: {why}. Bound it in the schema "
            "(maxLength on strings, maxItems on arrays, additionalProperties: false on "
            "objects, minimum/maximum on integers)."
        )
        self.path = path


def answer_chars(schema: Mapping[str, Any]) -> int:
    """Characters of the longest compact JSON answer valid for ``schema`` (module docstring).
    Raises :class:`UnboundedSchemaError` when there is no finite bound."""
    return _chars(schema, "$")


def answer_tokens(schema: Mapping[str, Any]) -> int:
    """Upper bound on the tokens of any valid compact answer to ``schema``, end token included
    (tokens <= characters: see the module docstring)."""
    return answer_chars(schema) + EOS_TOKENS


def reply_tokens(schema: Mapping[str, Any], cap: int | None = None) -> int:
    """The ``max_tokens`` of a request constrained by ``schema``: :func:`answer_tokens`, or
    ``cap`` when a user set a smaller one (answers longer than the cap are then cut)."""
    bound = answer_tokens(schema)
    return bound if cap is None else max(1, min(int(cap), bound))


def token_caps(
    value: int | Mapping[str, int | None] | None, purposes: Sequence[str], owner: str
) -> dict[str, int | None]:
    """A method's ``max_tokens`` setting as a cap per purpose (None: the schema's bound).

    ``value`` is null (every purpose asks for its bound), an int (a cap on every purpose) or a
    mapping ``{purpose: cap}`` (the purposes left out ask for their bound). A cap is never
    needed for a complete answer; it only trades cut answers for a shorter reply budget."""
    if value is None:
        return {p: None for p in purposes}
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in purposes)
        if unknown:
            raise ConfigError(
                f"memarena: {owner}.max_tokens names unknown purposes {unknown}; valid "
                f"purposes: {list(purposes)} (or one int for all, or null for the bounds)."
            )
        caps = {p: value.get(p) for p in purposes}
    else:
        caps = {p: value for p in purposes}
    for purpose, cap in caps.items():
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigError(
                f"memarena: {owner}.max_tokens for {purpose} is {cap!r}; a cap is an int >= 1, "
                "or null for the bound computed from the answer's JSON schema."
            )
    return caps


# -- the walk ------------------------------------------------------------------------------------
def _chars(node: Any, path: str) -> int:
    if not isinstance(node, Mapping):
        raise UnboundedSchemaError(path, f"the schema {node!r} admits any value")
    for key in ("$ref", "allOf", "not", "if", "prefixItems", "patternProperties"):
        if key in node:
            raise UnboundedSchemaError(path, f"'{key}' is not supported by the bound")
    if "const" in node:
        return _json_len(node["const"])
    if "enum" in node:
        values = list(node["enum"])
        if not values:
            raise UnboundedSchemaError(path, "an empty enum admits no value")
        return max(_json_len(v) for v in values)
    for key in ("anyOf", "oneOf"):
        if key in node:
            rest = {k: v for k, v in node.items() if k != key}
            return max(
                _chars({**rest, **branch}, f"{path}<{key} {i}>")
                for i, branch in enumerate(node[key])
            )
    kind = node.get("type")
    if kind is None:
        raise UnboundedSchemaError(path, "no type, enum or const: any value is valid")
    if isinstance(kind, list):
        return max(_chars({**node, "type": k}, path) for k in kind)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "string":
        return _string(node, path)
    if kind == "integer":
        return _integer_chars(*_int_range(node))
    if kind == "number":
        return _number(node)
    if kind == "array":
        return _array(node, path)
    if kind == "object":
        return _object(node, path)
    raise UnboundedSchemaError(path, f"unknown type {kind!r}")


def _json_len(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _string(node: Mapping[str, Any], path: str) -> int:
    if "maxLength" not in node:
        raise UnboundedSchemaError(path, "a string without maxLength")
    return int(node["maxLength"]) + 2


def _int_range(node: Mapping[str, Any]) -> tuple[int, int]:
    """The smallest and largest integer within the node's bounds (int64 limits if unbound)."""
    low, high = INT64
    if _bound(node, "minimum") is not None:
        low = math.ceil(node["minimum"])
    if _bound(node, "exclusiveMinimum") is not None:
        low = max(low, math.floor(node["exclusiveMinimum"]) + 1)
    if _bound(node, "maximum") is not None:
        high = math.floor(node["maximum"])
    if _bound(node, "exclusiveMaximum") is not None:
        high = min(high, math.ceil(node["exclusiveMaximum"]) - 1)
    return low, max(low, high)


def _bound(node: Mapping[str, Any], key: str) -> float | None:
    """A numeric bound of ``node`` (draft-4 boolean exclusive flags are not bounds)."""
    value = node.get(key)
    return None if isinstance(value, bool) or not isinstance(value, int | float) else value


def _integer_chars(low: int, high: int) -> int:
    """Longest decimal form of an integer in [low, high]: within each sign the length grows
    with the magnitude, which is largest at an end of the range."""
    return max(len(str(low)), len(str(high)))


def _number(node: Mapping[str, Any]) -> int:
    low, high = INT64
    for key in ("minimum", "exclusiveMinimum"):
        if _bound(node, key) is not None:
            low = math.floor(node[key])
    for key in ("maximum", "exclusiveMaximum"):
        if _bound(node, key) is not None:
            high = math.ceil(node[key])
    # a negative fraction above -1 prints as "-0.x": floor(minimum) <= -1 already counts the sign
    return _integer_chars(low, high) + 1 + FRACTION_DIGITS


def _array(node: Mapping[str, Any], path: str) -> int:
    if "maxItems" not in node:
        raise UnboundedSchemaError(path, "an array without maxItems")
    n = int(node["maxItems"])
    if n <= 0:
        return 2
    item = _chars(node.get("items", {}), f"{path}[]")
    return 2 + n * item + (n - 1)


def _object(node: Mapping[str, Any], path: str) -> int:
    if node.get("additionalProperties", True) is not False:
        raise UnboundedSchemaError(path, "an open object (set additionalProperties: false)")
    props = node.get("properties") or {}
    fields = [_json_len(str(k)) + 1 + _chars(v, f"{path}.{k}") for k, v in props.items()]
    return 2 + sum(fields) + max(0, len(fields) - 1)
