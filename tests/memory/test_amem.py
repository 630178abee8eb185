"""A-Mem: the note analysis, the link / evolution bookkeeping of its code worked by hand,
retrieval with linked notes, consolidation, and the no-LLM lite mode."""

from __future__ import annotations

import json

from baseline_helpers import episode, query, services
from doubles import FakeLLM

from memarena.memory.amem import AMem, Note, apply_evolution


def _amem(llm: FakeLLM, **kw) -> AMem:
    return AMem(services=services(llm), **kw)


def _notes() -> tuple[Note, list[Note]]:
    new = Note("n", "new", tags=["t0"])
    return new, [Note("a", "A", context="ca", tags=["x"]), Note("b", "B", context="cb", tags=["y"])]


def test_no_evolution_unless_should_evolve():
    new, near = _notes()
    done = apply_evolution(new, near, {"should_evolve": False, "actions": ["strengthen"],
                                       "suggested_connections": [1]}, time=3)  # fmt: skip
    assert done == {"links": 0, "neighbours": 0, "invalid": 0} and not new.links
    assert apply_evolution(new, near, None, time=3)["links"] == 0


def test_strengthen_links_the_new_note_only_and_replaces_its_tags():
    new, near = _notes()
    decision = {
        "should_evolve": True,
        "actions": ["strengthen"],
        "suggested_connections": [2, 2, 7, 1],
        "tags_to_update": ["planning", "blocks"],
        "new_context_neighborhood": ["ignored"],
        "new_tags_neighborhood": [["ignored"]],
    }
    done = apply_evolution(new, near, decision, time=3)
    assert new.links == ["b", "a"] and done == {"links": 2, "neighbours": 0, "invalid": 1}
    assert new.tags == ["planning", "blocks"]
    assert near[0].links == [] and near[0].tags == ["x"]  # neighbours untouched


def test_update_neighbor_replaces_context_and_tags_in_order_and_keeps_history():
    new, near = _notes()
    decision = {
        "should_evolve": True,
        "actions": ["update_neighbor"],
        "suggested_connections": [],
        "tags_to_update": [],
        "new_context_neighborhood": ["ca2"],  # shorter than the tag lists: b keeps its context
        "new_tags_neighborhood": [["x2"], ["y2", "z"]],
    }
    done = apply_evolution(new, near, decision, time=4)
    assert done["neighbours"] == 2 and new.tags == ["t0"] and not new.links
    assert (near[0].context, near[0].tags) == ("ca2", ["x2"])
    assert (near[1].context, near[1].tags) == ("cb", ["y2", "z"])
    assert near[0].evolution_history == [
        {"time": 4, "by": "n", "before": {"context": "ca", "tags": ["x"]}}
    ]


def _analysis(context: str) -> str:
    return json.dumps({"keywords": ["k1", "k2", "k3"], "context": context, "tags": ["t"]})


def _evolution(**fields) -> str:
    base = {"should_evolve": True, "actions": ["strengthen"], "suggested_connections": [1],
            "tags_to_update": ["linked"], "new_context_neighborhood": [],
            "new_tags_neighborhood": []}  # fmt: skip
    return json.dumps(base | fields)


def test_full_mode_batches_analysis_and_evolution_and_retrieves_linked_notes():
    llm = FakeLLM([_analysis("v:1,0,0"), _analysis("v:0,1,0"), _evolution()])
    memory = _amem(llm, top_k=1)
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    # one analysis call (2 requests); b's evolution against a (a had no earlier note)
    assert llm.batches == 2 and memory.counts["evolutions"] == 1
    b = memory.notes["b@1"]
    assert b.links == ["a@0"] and b.tags == ["linked"] and b.keywords == ["k1", "k2", "k3"]
    llm.answers = [_analysis("v:0,0,1"), _evolution(suggested_connections=[2])]
    memory.observe(*episode("v:0,0,1", True, "c"))
    # the query hits b (its key embeds its content, context and tags; the fake embedder hashes
    # it), so check the rule itself: a hit brings its linked notes
    chosen = memory.select(memory.index.matrix[memory.index.row["b@1"]])
    assert chosen == ["b@1", "a@0"]
    ctx = memory.retrieve(query("v:0,1,0"))
    assert ctx.memory_ids and "Related memories:" in ctx.slots["amem_notes"]
    assert memory.metrics()["memory_links"] == 2


def test_consolidation_re_embeds_after_the_threshold():
    llm = FakeLLM([_analysis("c"), _analysis("c"), _evolution(), _analysis("c"), _evolution()])
    memory = _amem(llm, consolidate_every=2)
    memory.observe(*episode("v:1,0,0", True, "a"))
    memory.observe(*episode("v:1,0,0", True, "b"))
    assert memory.counts["consolidations"] == 0
    memory.observe(*episode("v:1,0,0", True, "c"))
    assert memory.counts["evolutions"] == 2 and memory.counts["consolidations"] == 1


def test_lite_mode_calls_no_llm_and_retrieves_by_content(tmp_path):
    llm = FakeLLM()
    memory = _amem(llm, mode="lite", top_k=1)
    memory.observe_groups([[episode("g1", True, "a")], [episode("g2", True, "b")]])
    assert llm.requests == [] and memory.name == "amem"
    note = memory.notes["a@0"]
    assert note.keywords == [] and note.links == [] and note.context == "General"
    vector = memory.services.embedder.encode([note.content])[0]
    assert memory.select(vector) == ["a@0"]
    memory.save(tmp_path)
    again = _amem(FakeLLM(), mode="lite", top_k=1)
    again.load(tmp_path)
    assert again.select(vector) == ["a@0"]
    again.freeze()
    before = again.state_dict()
    assert again.retrieve(query("g1")).memory_ids
    assert again.state_dict() == before  # frozen: no retrieval count changes
