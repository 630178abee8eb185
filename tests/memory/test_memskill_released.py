"""MemSkill's released controller (method.controller=released, MemCo's runs): a checkpoint in
MemSkill's published format loads (policy, encoder names, operation bank); each span's skills
are the largest logits of the loaded policy; nothing is trained; the global memory writes every
domain's saved episodes again with their source domain; without the checkpoint the run stops
before any work, naming the key and where the file comes from."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from baseline_helpers import episode, services
from doubles import FakeLLM
from memskill_checkpoint import ENCODER, SKILLS, write_checkpoint

from conftest import compose_cfg, run_py
from memarena.core import ConfigError
from memarena.embed.sentence import SentenceEmbedder
from memarena.memory.memskill import MemSkill
from memarena.memory.memskill.released import load_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("memskill") / "alfworld_controller.pt")


def _insert(text: str) -> str:
    return json.dumps({"operations": [{"op": "INSERT", "content": text}]})


def test_a_released_checkpoint_loads_with_its_encoders_and_bank(checkpoint):
    loaded = load_checkpoint(str(checkpoint))
    assert (loaded.state_dim, loaded.op_dim, loaded.hidden_dim) == (768, 384, 32)
    assert loaded.state_encoder == loaded.op_encoder == ENCODER
    assert [s.name for s in loaded.skills] == sorted(SKILLS)
    located = next(s for s in loaded.skills if s.name == "track_object_location")
    assert located.op == "insert" and located.description == SKILLS[located.name][1]
    assert "actor.0.weight" in loaded.state_dict and "actor_head.0.weight" not in loaded.state_dict
    other = load_checkpoint(str(checkpoint), encoder="/models/qwen3-embedding")
    assert other.state_encoder == other.op_encoder == "/models/qwen3-embedding"


def test_a_missing_or_foreign_file_names_the_key_and_the_source(tmp_path):
    for path in (None, str(tmp_path / "nope.pt")):
        with pytest.raises(ConfigError, match="method.checkpoint.*XaiverZ/memskill"):
            load_checkpoint(path)
    foreign = tmp_path / "weights.pt"
    torch.save({"model": {}}, foreign)
    with pytest.raises(ConfigError, match="no 'controller_state_dict'"):
        load_checkpoint(str(foreign))


def _reference_logits(raw: dict, state: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """The released network computed by hand from the raw state dict."""

    def mlp(prefix: str, x: torch.Tensor, last_relu: bool) -> torch.Tensor:
        x = torch.relu(x @ raw[f"{prefix}.0.weight"].T + raw[f"{prefix}.0.bias"])
        x = x @ raw[f"{prefix}.2.weight"].T + raw[f"{prefix}.2.bias"]
        return torch.relu(x) if last_relu else x

    s = mlp("state_net", torch.from_numpy(state)[None], True)
    o = mlp("op_net", torch.from_numpy(ops), True)
    pairs = torch.cat([s.expand(o.shape[0], -1), o], dim=-1)
    return mlp("actor_head", pairs, False).squeeze(-1).numpy()


def test_skills_are_the_largest_logits_and_nothing_is_trained(checkpoint):
    llm = FakeLLM(default=_insert("the fridge holds apples"))
    memory = MemSkill(services=services(llm), controller="released", checkpoint=str(checkpoint))
    before = {k: v.clone() for k, v in memory.released.net.state_dict().items()}
    assert sorted(memory.skills.skills) == sorted(SKILLS)  # the checkpoint's bank
    memory.observe_groups([[episode("v:1,0,0", True, "a")]])
    memory.observe_groups([[episode("v:0,1,0", True, "b")]])
    memory.finish_acquisition()
    # the skills the executor was given: the 3 largest logits of the loaded policy
    encoder = SentenceEmbedder(model=ENCODER, normalize=False)
    raw = torch.load(checkpoint, weights_only=False)["controller_state_dict"]
    skills = list(memory.skills.skills.values())
    ops = encoder.encode([s.description for s in skills])
    span = memory.replay[1]["text"]
    shown = encoder.encode([memory.memory.items["m1"]])
    state = np.concatenate([encoder.encode([span])[0], shown.mean(axis=0)]).astype(np.float32)
    logits = _reference_logits(raw, state, ops.astype(np.float32))
    expected = [skills[i].name for i in np.argsort(-logits)[:3]]
    executor = llm.requests[-1].messages[-1]["content"]
    acting = [n for n in expected if memory.skills.skills[n].op != "noop"]
    assert all(f"[{n}]" in executor for n in acting)
    assert not [n for n in SKILLS if f"[{n}]" in executor and n not in acting]
    after = memory.released.net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # never trained
    assert memory.ppo.trainer is None and memory.counts["ppo_updates"] == 0
    state_dict = memory.state_dict()
    assert state_dict["released_checkpoint"]["sha256"] == memory.released.checkpoint.sha256


def test_global_memory_rewrites_every_domain_with_its_source(checkpoint):
    def domain(goal: str) -> MemSkill:
        m = MemSkill(services=services(FakeLLM(default=_insert(goal))), controller="released",
                     checkpoint=str(checkpoint))  # fmt: skip
        m.observe_groups([[episode(goal, True, goal)]])
        m.finish_acquisition()
        return m

    film, music = domain("v:1,0,0"), domain("v:0,1,0")
    llm = FakeLLM(default=_insert("merged"))
    merged = MemSkill(services=services(llm), controller="released", checkpoint=str(checkpoint),
                      global_build="rerun")  # fmt: skip
    merged.merge_domains({"film": film, "music": music})
    spans = [r.messages[-1]["content"] for r in llm.requests]
    assert len(spans) == 2
    assert "Source domain: film" in spans[0] and "v:1,0,0" in spans[0]
    assert "Source domain: music" in spans[1] and "v:0,1,0" in spans[1]
    assert list(merged.memory.items.values()) == ["merged", "merged"]
    copied = MemSkill(services=services(FakeLLM()), controller="released",
                      checkpoint=str(checkpoint))  # fmt: skip
    copied.merge_domains({"film": film, "music": music})  # memarena's reading: items copied
    assert sorted(copied.memory.items.values()) == ["v:0,1,0", "v:1,0,0"]


def test_memco_experiments_run_the_released_controller():
    cfg = compose_cfg(["experiment=memco_table1_pddl", "method=memskill_as_released"])
    assert (cfg.method.controller, cfg.method.global_build) == ("released", "rerun")
    assert cfg.method.checkpoint.endswith("memskill/alfworld_controller.pt")
    assert compose_cfg(["method=memskill"]).method.controller == "ppo"  # one key away


def test_without_the_checkpoint_the_run_stops_before_any_work(tmp_path):
    proc = run_py(
        ["experiment=memco_table1_pddl", "method=memskill_as_released", "backbone=scripted",
         "env.require_data=false", "env.train_source=generated", "protocol.max_train_tasks=1",
         "protocol.max_eval_tasks=1", "logger=none", f"paths.models_dir={tmp_path}/models",
         f"paths.results_dir={tmp_path}/results"],
    )  # fmt: skip
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "method.checkpoint" in said and "XaiverZ/memskill" in said and "Traceback" not in said
    assert not list((tmp_path / "results").rglob("episodes.jsonl"))
    assert not list((tmp_path / "results").rglob("acquisition.jsonl"))
