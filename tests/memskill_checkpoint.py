"""A controller checkpoint in MemSkill's released format, built for tests (the real one is the
user's to download). Its layout follows MemSkill's trainer (``save_checkpoint``: one dict with
``controller_state_dict``, ``optimizer_state_dict``, ``operation_bank``, ``config`` and the
training counters) and policy (``state_net`` / ``op_net`` / ``actor_head`` / ``critic_head``,
two linear layers each); the bank holds seven skills as MemSkill's evolved ALFWorld bank does
(the four seeds and three learnt ones), described here in memarena's words."""

from __future__ import annotations

from pathlib import Path

import torch

ENCODER = "embedded:all-minilm-l6-v2"  # 384 dimensions: states of 768
SKILLS = {
    "insert": ("insert", "Add new lasting facts to memory."),
    "update": ("update", "Rewrite a shown memory the new text corrects."),
    "delete": ("delete", "Drop a shown memory the new text shows wrong."),
    "noop": ("noop", "Leave the memory as it is."),
    "capture_action_constraints": ("insert", "Note which actions the environment refused and why."),
    "track_object_location": ("insert", "Note where each object was found or left."),
    "track_object_movements": ("update", "Follow objects as they move between receptacles."),
}


def state_dict(state_dim: int, op_dim: int, hidden: int, seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)

    def linear(name: str, rows: int, cols: int) -> dict:
        weight = torch.randn(rows, cols, generator=generator) / cols**0.5
        return {f"{name}.weight": weight, f"{name}.bias": torch.zeros(rows)}

    out: dict = {}
    for name, (rows, cols) in {
        "state_net.0": (hidden, state_dim),
        "state_net.2": (hidden, hidden),
        "op_net.0": (hidden, op_dim),
        "op_net.2": (hidden, hidden),
        "actor_head.0": (hidden, 2 * hidden),
        "actor_head.2": (1, hidden),
        "critic_head.0": (hidden, hidden),
        "critic_head.2": (1, hidden),
    }.items():
        out.update(linear(name, rows, cols))
    return out


def write_checkpoint(path: Path, dim: int = 384, hidden: int = 32, encoder: str = ENCODER) -> Path:
    operations = {
        name: {
            "name": name,
            "description": description,
            "instruction_template": f"Apply {name} to the memories the span concerns.",
            "update_type": kind,
            "meta_info": {"usage_count": 0, "avg_reward": 0.0, "recent_rewards": []},
            "embedding": None,
        }
        for name, (kind, description) in SKILLS.items()
    }
    checkpoint = {
        "checkpoint_version": 4,
        "epoch": 3,
        "completed_outer_epoch": 3,
        "controller_state_dict": state_dict(2 * dim, dim, hidden),
        "optimizer_state_dict": {},
        "operation_bank": {"operations": operations, "max_ops": 30, "skip_noop": False},
        "operation_bank_new_operation_names": list(SKILLS)[4:],
        "total_steps": 1000,
        "config": {
            "state_encoder": encoder,
            "op_encoder": encoder,
            "controller_hidden_dim": hidden,
            "action_top_k": 3,
            "state_fusion": "mean",
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(checkpoint, path)
    return path
