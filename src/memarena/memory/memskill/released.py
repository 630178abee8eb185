"""MemSkill's released controller, as MemCo ran it (``method.controller: released``).

MemCo's MemSkill runs (SYannL/nvdamas ``scripts/run_memskill_qwen32b_api_fever_pddl.sh``:
``--memskill_controller ppo --memskill_checkpoint_path Models/memskill/alfworld_controller.pt
--memskill_require_ppo``, never ``--memskill_train_controller``) load a controller MemSkill
trained on ALFWorld and never train it (``memskill.py``: ``_train_controller_from_replay`` only
loads the checkpoint). Facts of the published format (MemSkill, ViktorAxelsen/MemSkill
``src/trainer.py`` ``save_checkpoint``; ``src/controller.py``; ``src/operation_bank.py``):

- one ``torch.save`` of a dict; memarena reads ``controller_state_dict`` (the policy network:
  ``state_net.{0,2}``, ``op_net.{0,2}``, ``actor_head.{0,2}``, ``critic_head.{0,2}``, weights
  and biases; the hidden size, state and operation dimensions are read from their shapes),
  ``config`` (``state_encoder`` / ``op_encoder``: the encoders' model names, default
  Qwen/Qwen3-Embedding-0.6B) and ``operation_bank`` (``{"operations": {name: {name,
  description, instruction_template, update_type, meta_info, embedding}}, "max_ops",
  "skip_noop"}``: MemSkill's evolved skills). Everything else it holds (optimizer, RNG, logs)
  is unused. A separate bank file (``method.operation_bank``, JSON or torch) replaces the
  checkpoint's, as nvdamas' ``memskill_operation_bank_path``;
- selection (nvdamas ``_MemSkillPPOAdapter.select``): the state is the span's state-encoder
  embedding followed by the mean embedding of the memory items shown with it (zeros when none
  is shown); each skill is its description's op-encoder embedding; the logits of the policy
  over the skills, and the ``k`` largest taken (deterministic; MemCo: ``deterministic=True``).
  Embeddings are the encoders' raw output (not normalised), as the adapter takes them.

The checkpoint is the user's to download (the run names :data:`SOURCE`); memarena never
fetches it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from memarena.core import ConfigError
from memarena.memory.memskill.banks import OPERATIONS, Skill
from memarena.memory.memskill.ppo import PolicyValueNet

DEFAULT_ENCODER = "Qwen/Qwen3-Embedding-0.6B"
SOURCE = (
    "MemSkill's released ALFWorld controller, from the Hugging Face collection XaiverZ/memskill "
    "(MemCo's code fetches repo XaiverZ/MemSkill and keeps it as "
    "Models/memskill/alfworld_controller.pt: nvdamas scripts/memskill/memskill_assets.py)"
)
# the released network's module names -> memarena's PolicyValueNet's
_RENAMED = {"actor_head.": "actor.", "critic_head.": "critic."}


@dataclass
class ReleasedCheckpoint:
    """What a released checkpoint gives memarena."""

    path: str
    sha256: str
    state_dict: dict[str, torch.Tensor]
    state_encoder: str
    op_encoder: str
    skills: list[Skill]
    hidden_dim: int
    state_dim: int
    op_dim: int


def _missing(path: str | None) -> ConfigError:
    where = f"{path} does not exist" if path else "is not set"
    return ConfigError(
        f"memarena: method.checkpoint {where}. method.controller=released loads {SOURCE}. "
        "Download it and set method.checkpoint=<path to the .pt file>, or train a controller "
        "here with method.controller=ppo."
    )


def _torch_load(path: Path) -> Any:
    # a checkpoint holds plain Python values beside its tensors (its config, the bank)
    return torch.load(path, map_location="cpu", weights_only=False)


def load_checkpoint(
    path: str | None, operation_bank: str | None = None, encoder: str | None = None
) -> ReleasedCheckpoint:
    """Read a released controller checkpoint (module docstring); a clear ConfigError when the
    file is missing or is not one. ``encoder`` replaces both encoders' names (a local copy)."""
    if not path or not Path(path).expanduser().is_file():
        raise _missing(path)
    file = Path(path).expanduser()
    payload = _torch_load(file)
    if not isinstance(payload, dict) or "controller_state_dict" not in payload:
        raise ConfigError(
            f"memarena: method.checkpoint={path} is not a MemSkill controller checkpoint: it "
            "holds no 'controller_state_dict' (MemSkill's trainer saves one dict with it, its "
            f"config and its operation bank). Expected {SOURCE}."
        )
    raw = payload["controller_state_dict"]
    state = {_renamed(k): torch.as_tensor(v).float() for k, v in raw.items()}
    for key in ("state_net.0.weight", "op_net.0.weight"):
        if key not in state:
            raise ConfigError(
                f"memarena: method.checkpoint={path}: its controller_state_dict lacks {key} "
                "(MemSkill's PPOController: state_net, op_net, actor_head, critic_head)."
            )
    config = dict(payload.get("config") or {})
    bank = payload.get("operation_bank")
    if operation_bank:
        bank = read_operation_bank(operation_bank)
    return ReleasedCheckpoint(
        path=str(file),
        sha256=hashlib.sha256(file.read_bytes()).hexdigest(),
        state_dict=state,
        state_encoder=str(encoder or config.get("state_encoder") or DEFAULT_ENCODER),
        op_encoder=str(encoder or config.get("op_encoder") or DEFAULT_ENCODER),
        skills=parse_operation_bank(bank),
        hidden_dim=int(state["state_net.0.weight"].shape[0]),
        state_dim=int(state["state_net.0.weight"].shape[1]),
        op_dim=int(state["op_net.0.weight"].shape[1]),
    )


def _renamed(key: str) -> str:
    for old, new in _RENAMED.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


def read_operation_bank(path: str) -> Any:
    """A bank file: JSON, or a torch file (a checkpoint holding ``operation_bank``)."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(
            f"memarena: method.operation_bank={path} does not exist (a MemSkill operation bank: "
            "JSON, or a checkpoint holding one); null reads the checkpoint's."
        )
    if file.suffix == ".json":
        return json.loads(file.read_text())
    payload = _torch_load(file)
    return payload.get("operation_bank", payload) if isinstance(payload, dict) else payload


def parse_operation_bank(bank: Any) -> list[Skill]:
    """MemSkill's bank (``{"operations": {name: op}}``, or the mapping itself) as skills, in
    name order (the adapter's order); ``noop`` dropped when the bank says ``skip_noop``; an
    empty or missing bank: the seed skills (nvdamas keeps them then)."""
    from memarena.memory.memskill.banks import seed_skills

    if not bank:
        return seed_skills()
    if not isinstance(bank, dict):
        raise ConfigError(
            f"memarena: a MemSkill operation bank must be a mapping, not {type(bank).__name__}."
        )
    operations = bank.get("operations", bank)
    skip_noop = bool(bank.get("skip_noop", False))
    skills = []
    for name in sorted(operations):
        op = operations[name]
        kind = str(op.get("update_type", "")).lower()
        if kind not in OPERATIONS:
            raise ConfigError(
                f"memarena: the operation bank's skill {name!r} has update_type {kind!r}; "
                f"valid: {list(OPERATIONS)}."
            )
        if skip_noop and kind == "noop":
            continue
        skills.append(
            Skill(
                name=str(op.get("name") or name),
                op=kind,
                description=str(op.get("description") or ""),
                instruction=str(op.get("instruction_template") or ""),
            )
        )
    return skills or seed_skills()


class ReleasedController:
    """The loaded policy, frozen: :meth:`select` takes the ``k`` largest logits per span."""

    def __init__(self, checkpoint: ReleasedCheckpoint, k: int) -> None:
        self.checkpoint, self.k = checkpoint, int(k)
        c = checkpoint
        self.net = PolicyValueNet(c.state_dim, c.op_dim, c.hidden_dim)
        self.net.load_state_dict(c.state_dict, strict=True)
        self.net.eval()
        for parameter in self.net.parameters():
            parameter.requires_grad_(False)

    def state(self, span: np.ndarray, shown: Sequence[np.ndarray]) -> np.ndarray:
        """``[span || mean(shown)]`` (zeros for the memory half when nothing is shown)."""
        span = np.asarray(span, dtype=np.float32)
        memory = np.mean(np.asarray(shown, dtype=np.float32), axis=0) if len(shown) else None
        return np.concatenate([span, np.zeros_like(span) if memory is None else memory])

    def logits(self, state: np.ndarray, ops: np.ndarray) -> np.ndarray:
        if state.shape[0] != self.checkpoint.state_dim or ops.shape[1] != self.checkpoint.op_dim:
            raise ConfigError(
                f"memarena: the MemSkill checkpoint expects states of {self.checkpoint.state_dim} "
                f"and skills of {self.checkpoint.op_dim} dimensions; its encoders "
                f"({self.checkpoint.state_encoder}, {self.checkpoint.op_encoder}) gave "
                f"{state.shape[0]} and {ops.shape[1]}. Use the encoders it was trained with "
                "(method.encoder=null reads them from the checkpoint's config)."
            )
        with torch.no_grad():
            logits, _ = self.net(torch.from_numpy(state)[None], torch.from_numpy(ops)[None])
        return logits[0].numpy()

    def select(
        self,
        spans: np.ndarray,
        shown: Sequence[Sequence[np.ndarray]],
        skills: Sequence[Skill],
        encode_ops: Callable[[list[str]], np.ndarray],
    ) -> list[list[str]]:
        """The skills' names per span: the ``k`` largest logits, best first."""
        ops = np.asarray(encode_ops([s.description or s.name for s in skills]), dtype=np.float32)
        k = max(1, min(self.k, len(skills)))
        out = []
        for span, items in zip(spans, shown, strict=True):
            logits = self.logits(self.state(span, items), ops)
            order = np.argsort(-logits, kind="stable")[:k]
            out.append([skills[int(i)].name for i in order])
        return out
