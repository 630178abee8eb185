"""The call cache and the shared generate(): hits, misses, persistence, accounting, fallbacks."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest, Completion
from memarena.llm.base import BackboneBase, check_constraints, json_matches_schema
from memarena.llm.base import _matches as subset_matches
from memarena.llm.cache import CallCache


class EchoBackbone(BackboneBase):
    """A test engine: echoes the last message (or the reply scripted for it in ``replies``);
    records what reached the engine."""

    def __init__(self, cache_path=None, name="echo", model="echo-v1", replies=None):
        super().__init__(name=name, cache_model=model, cache_path=cache_path)
        self.engine_batches: list[list[str]] = []
        self.replies = dict(replies or {})

    def _generate(self, requests):
        self.engine_batches.append([r.messages[-1]["content"] for r in requests])
        out = []
        for r in requests:
            prompt = r.messages[-1]["content"]
            text = self.replies.get(prompt, prompt)
            out.append(Completion(text=text, prompt_tokens=10, completion_tokens=3))
        return out


def req(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def test_hits_and_misses_are_counted_and_tokens_include_hits(tmp_path):
    bb = EchoBackbone(tmp_path / "calls.sqlite")
    first = bb.generate([req("a"), req("b")])
    assert [c.text for c in first] == ["a", "b"] and not any(c.cached for c in first)
    second = bb.generate([req("a"), req("c"), req("b")])
    assert [c.text for c in second] == ["a", "c", "b"]
    assert [c.cached for c in second] == [True, False, True]
    # the engine saw each request once; the second call sent only the miss
    assert bb.engine_batches == [["a", "b"], ["c"]]
    u = bb.usage
    assert (u.calls, u.requests, u.cache_hits, u.cache_misses) == (2, 5, 2, 3)
    assert (u.prompt_tokens, u.completion_tokens) == (50, 15)  # hits counted too


def test_cache_persists_across_instances_and_is_keyed_by_model(tmp_path):
    path = tmp_path / "sub" / "calls.sqlite"  # parent folder is created
    EchoBackbone(path).generate([req("x"), req("y", temperature=0.9, seed=1)])
    again = EchoBackbone(path)
    out = again.generate(
        [req("x"), req("y", temperature=0.9, seed=1), req("y", temperature=0.9, seed=2)]
    )
    assert [c.cached for c in out] == [True, True, False]  # another seed is another sample
    assert again.engine_batches == [["y"]]
    other_model = EchoBackbone(path, model="echo-v2")
    other_model.generate([req("x")])
    assert other_model.usage.cache_misses == 1
    assert len(CallCache(path)) == 4


def test_identical_requests_in_one_batch_are_computed_once(tmp_path):
    bb = EchoBackbone(tmp_path / "c.sqlite")
    out = bb.generate([req("same"), req("same"), req("other")])
    assert bb.engine_batches == [["same", "other"]]
    assert [c.text for c in out] == ["same", "same", "other"]
    assert (bb.usage.cache_misses, bb.usage.cache_hits) == (2, 1)
    assert bb.usage.prompt_tokens == 30


def test_without_cache_every_request_reaches_the_engine():
    bb = EchoBackbone(cache_path=None)
    bb.generate([req("a")])
    bb.generate([req("a")])
    assert bb.engine_batches == [["a"], ["a"]]
    assert (bb.usage.cache_hits, bb.usage.cache_misses) == (0, 2)
    assert bb.generate([]) == [] and bb.usage.calls == 2


def test_every_request_field_is_part_of_the_key(tmp_path):
    """A request holds only what the model is asked (no expert or bookkeeping fields), so any
    field that differs is another entry and an identical request is a hit."""
    bb = EchoBackbone(tmp_path / "c.sqlite")
    bb.generate([req("a")])
    out = bb.generate([req("a"), req("a", max_tokens=7), req("a", stop=["\n"])])
    assert [c.cached for c in out] == [True, False, False]
    assert "meta" not in ChatRequest.__dataclass_fields__


def test_fallbacks_are_counted_for_every_request_and_logged_once(tmp_path, caplog):
    bb = EchoBackbone(
        tmp_path / "c.sqlite", replies={"ok": '{"n": 3}', "pick": " right ", "pick2": "up"}
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    with caplog.at_level(logging.WARNING, logger="memarena.llm.base"):
        out = bb.generate(
            [
                req("bad1", json_schema=schema),
                req("bad2", json_schema=schema),
                req("ok", json_schema=schema),
                req("pick", choices=["left", "right"]),
                req("pick2", choices=["left", "right"]),
            ]
        )
    assert [c.fallback for c in out] == [
        "json_invalid",
        "json_invalid",
        None,
        None,
        "choice_invalid",
    ]
    assert out[3].choice_index == 1
    assert bb.usage.fallbacks == {"json_invalid": 2, "choice_invalid": 1}
    logged = [r.getMessage() for r in caplog.records]
    assert sum("json_invalid" in m for m in logged) == 1
    assert sum("choice_invalid" in m for m in logged) == 1
    # a replayed run reports the same fallbacks (they are stored with the completion)
    replay = EchoBackbone(tmp_path / "c.sqlite")
    replay.generate([req("bad1", json_schema=schema)])
    assert replay.usage.fallbacks == {"json_invalid": 1} and replay.usage.cache_hits == 1


def test_engine_must_answer_every_request():
    class Short(EchoBackbone):
        def _generate(self, requests):
            return []

    with pytest.raises(RuntimeError, match="0 completions for 1 requests"):
        Short().generate([req("a")])


def test_bad_cache_path_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cache_path"):
        CallCache(blocker / "calls.sqlite")


def test_cache_roundtrips_every_field(tmp_path):
    cache = CallCache(tmp_path / "c.sqlite")
    done = Completion("tëxt ✓", prompt_tokens=7, completion_tokens=2, choice_index=1, fallback="x")
    cache.put_many([("k", "m", done)])
    got = cache.get("k")
    assert got == Completion("tëxt ✓", 7, 2, cached=True, choice_index=1, fallback="x")
    cache.put_many([("k", "m", Completion("other"))])  # the first writer wins
    assert cache.get("k").text == "tëxt ✓" and cache.get("missing") is None
    many = [(f"key{i}", "m", Completion(str(i))) for i in range(1200)]  # > one SELECT chunk
    cache.put_many(many)
    assert len(cache.get_many([k for k, _, _ in many])) == 1200


def test_several_processes_share_one_cache_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from memarena.core.llm_types import Completion
        from memarena.llm.cache import CallCache
        worker, path = int(sys.argv[1]), sys.argv[2]
        cache = CallCache(path)
        for i in range(60):
            key = f"k{(worker * 30 + i) % 150}"  # neighbours overlap on half their keys
            cache.put_many([(key, "m", Completion(text=f"w{worker}-{i}"))])
            assert cache.get(key) is not None
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(w), str(path)], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    cache = CallCache(path)
    assert len(cache) == 150
    assert cache._connect().execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_check_constraints_leaves_engine_answers_alone():
    choice = ChatRequest(messages=[], choices=["a", "b"])
    done = Completion("b", choice_index=1)
    assert check_constraints(choice, done) is done


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"action": "KEEP", "score": 0.5, "tags": ["x"]}', True),
        ('{"action": "KEEP", "score": 1}', True),
        ('{"action": "DROP", "score": 0.5}', False),  # not in the enum
        ('{"score": 0.5}', False),  # required key missing
        ('{"action": "KEEP", "score": "high"}', False),  # wrong type
        ('{"action": "KEEP", "score": true}', False),  # a boolean is no number
        ('{"action": "KEEP", "score": 0.5, "tags": [1]}', False),
        ('{"action": "KEEP", "score": 0.5, "extra": 1}', False),  # additionalProperties false
        ('{"action": "KEEP", "score": 2}', False),  # maximum
        ('{"action": "KEEP"', False),  # not JSON
    ],
)
def test_json_validation_of_the_common_subset(text, ok):
    schema = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["KEEP", "ARCHIVE", "REVISE"]},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        },
        "required": ["action", "score"],
        "additionalProperties": False,
    }
    assert json_matches_schema(text, schema) is ok
    try:
        value = __import__("json").loads(text)
    except ValueError:
        return
    assert subset_matches(value, schema) is ok  # our own checker agrees with jsonschema
