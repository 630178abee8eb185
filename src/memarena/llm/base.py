"""The part of ``generate(requests)`` every backbone shares.

``BackboneBase.generate`` looks the whole batch up in the call cache, sends the misses to the
engine in one ``_generate`` call, checks the constraints the engine was asked to honour
(a choice must be one of ``choices``; a JSON output must match its schema), stores the fresh
completions and counts everything in ``usage``: tokens of every request (cache hits included,
so a replayed run reports the same numbers), hits, misses and fallbacks (a completion's
``prompt_fit`` too: a prompt fitted into the context, :mod:`memarena.llm.context_fit`). Each
fallback kind is logged once per backbone; all of them are counted. A completion with fallback
``request_failed`` (no answer from the engine) or ``prompt_too_long`` (a limit of this engine
or server, not of the request) is never stored in the cache.

``native_tools`` says whether a backbone sends ``request.tools`` natively (the chat template's
``tools``, the API's ``tools``); a request with tools to a backbone without them is a
ConfigError. ``tools_identity`` (a tools template's name and digest) joins the cache key of
requests with tools only, so the keys of every other request stay as they were.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from abc import ABC, abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any

from memarena.core.errors import ConfigError
from memarena.core.llm_types import PROMPT_TOO_LONG, REQUEST_FAILED, ChatRequest, Completion
from memarena.core.settings import plain  # noqa: F401  (the engines import it from here)
from memarena.core.types import Usage
from memarena.llm.cache import CallCache

log = logging.getLogger(__name__)
_NOT_STORED = frozenset({REQUEST_FAILED, PROMPT_TOO_LONG})


class BackboneBase(ABC):
    """Cache lookup, constraint checks and usage accounting around an engine's ``_generate``.

    Subclasses set ``name`` and implement ``_generate(requests)``, which returns
    one completion per request, in order. ``cache_model`` is the model identity that goes into
    every cache key: two backbones share cache entries exactly when it is equal (and, for
    requests with tools, ``tools_identity`` too).
    """

    native_tools: bool = False  # sends request.tools natively (set by each engine)
    tools_identity: str = ""  # the tools template in use, for the keys of requests with tools

    def __init__(self, *, name: str, cache_model: str, cache_path: str | Path | None) -> None:
        self.name = name
        self.cache_model = cache_model
        self.usage = Usage()
        self.cache = CallCache(cache_path) if cache_path else None
        self._logged_fallbacks: set[str] = set()

    @abstractmethod
    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        """Answer every request (no cache involved); one completion per request, in order."""

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        if not self.native_tools and any(r.tools is not None for r in requests):
            raise ConfigError(self.no_native_tools())
        self.usage.calls += 1
        self.usage.requests += len(requests)
        keys = [r.cache_key(self.request_model(r)) for r in requests]
        found = self.cache.get_many(keys) if self.cache is not None else {}

        # identical uncached requests in one batch are computed once
        todo: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key not in found and key not in todo:
                todo[key] = i
        fresh: dict[str, Completion] = {}
        if todo:
            batch = [requests[i] for i in todo.values()]
            outputs = self._generate(batch)
            if len(outputs) != len(batch):
                raise RuntimeError(
                    f"{type(self).__name__}._generate returned {len(outputs)} completions "
                    f"for {len(batch)} requests"
                )
            for key, request, completion in zip(todo, batch, outputs, strict=True):
                fresh[key] = check_constraints(request, completion)
            self._store(fresh)

        results: list[Completion] = []
        for key in keys:
            if key in fresh:
                completion = fresh.pop(key)  # the first occurrence is the computed one
                self.usage.cache_misses += 1
            else:
                completion = found.get(key) or replace(_first(results, keys, key), cached=True)
                self.usage.cache_hits += 1
            results.append(completion)
            self.usage.prompt_tokens += completion.prompt_tokens
            self.usage.completion_tokens += completion.completion_tokens
            if completion.fallback:
                self.record_fallback(completion.fallback)
            if completion.prompt_fit:
                self.record_fallback(completion.prompt_fit)
        return results

    def request_model(self, request: ChatRequest) -> str:
        """The model identity in ``request``'s cache key: ``cache_model``, plus the tools
        template for a request with tools when one is set."""
        if request.tools is not None and self.tools_identity:
            return f"{self.cache_model}:tools={self.tools_identity}"
        return self.cache_model

    def no_native_tools(self) -> str:
        """The ConfigError message for a request with tools to a backbone without native
        tools (engines say how to turn them on)."""
        return (
            f"memarena: backbone {self.name} got a request with tools, but it does not send "
            "tools natively (native_tools is false)."
        )

    def _store(self, fresh: dict[str, Completion]) -> None:
        # a request that got no answer is asked again on a rerun, never replayed from the cache
        fresh = {k: c for k, c in fresh.items() if c.fallback not in _NOT_STORED}
        if self.cache is None or not fresh:
            return
        try:
            self.cache.put_many((k, self.cache_model, c) for k, c in fresh.items())
        except sqlite3.Error as err:
            self.record_fallback("cache_write_failed", detail=str(err))

    def record_fallback(self, kind: str, detail: str = "") -> None:
        """Count a fallback in ``usage.fallbacks``; the first of each kind is logged."""
        self.usage.count_fallback(kind)
        if kind not in self._logged_fallbacks:
            self._logged_fallbacks.add(kind)
            log.warning(
                "%s: fallback %r%s (counted in usage.fallbacks; further ones are not logged)",
                self.name,
                kind,
                f": {detail}" if detail else "",
            )

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _first(results: list[Completion], keys: list[str], key: str) -> Completion:
    return results[keys.index(key)]


# -- constraint checks shared by every engine ---------------------------------------------------
def check_constraints(request: ChatRequest, completion: Completion) -> Completion:
    """Mark a completion that breaks its request's constraint with a fallback kind.

    A choice request whose engine did not set ``choice_index`` is matched on the stripped text
    (``choice_invalid`` when it is none of the choices); a JSON request whose text does not
    parse or does not match the schema becomes ``json_invalid``. The text is left as it was.
    """
    if completion.fallback:
        return completion
    if request.choices is not None and completion.choice_index is None:
        text = completion.text.strip()
        if text in request.choices:
            return replace(completion, choice_index=request.choices.index(text))
        return replace(completion, fallback="choice_invalid")
    if request.json_schema is not None and not json_matches_schema(
        completion.text, request.json_schema
    ):
        return replace(completion, fallback="json_invalid")
    return completion


def json_matches_schema(text: str, schema: dict[str, Any]) -> bool:
    """True when ``text`` is one JSON document valid for ``schema``."""
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return False
    try:
        import jsonschema
    except ImportError:  # not a hard dependency: check the common subset ourselves
        return _matches(value, schema)
    try:
        cls = jsonschema.validators.validator_for(schema)
        return cls(schema).is_valid(value)
    except jsonschema.exceptions.SchemaError:
        return _matches(value, schema)


_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return name == "number" or float(value).is_integer()
    return isinstance(value, _TYPES.get(name, object))


def _matches(value: Any, schema: dict[str, Any]) -> bool:
    """The common JSON-schema subset: types, enum/const, objects, arrays, bounds, anyOf."""
    if not isinstance(schema, dict):
        return True
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    for key in ("anyOf", "oneOf"):
        if key in schema and not any(_matches(value, s) for s in schema[key]):
            return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                if not _matches(item, props[name]):
                    return False
            elif extra is False or (isinstance(extra, dict) and not _matches(item, extra)):
                return False
    if isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        if isinstance(schema.get("items"), dict):
            return all(_matches(item, schema["items"]) for item in value)
    if isinstance(value, str):
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            return False
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return False
        if "maximum" in schema and value > schema["maximum"]:
            return False
    return True
