"""MemSkill's PPO controller in torch (memarena's code, written from the facts of MemSkill's
``src/controller.py`` / ``src/trainer.py`` / ``src/config.py``, ViktorAxelsen/MemSkill, and its
paper): a policy over the skills of the bank with a value head, trained with the clipped
PPO objective on GAE advantages.

- :class:`PolicyValueNet`: a state MLP (state -> hidden -> hidden, ReLU) and a skill MLP (skill
  embedding -> hidden -> hidden, ReLU); the actor scores each (state, skill) pair from the two
  concatenated (2 hidden -> hidden -> 1), so the action space follows the bank's size; the critic
  reads the state alone (hidden -> hidden -> 1).
- the action is the top-K skills drawn without replacement (Gumbel top-K while training, the K
  largest logits when acting frozen); its log-probability is the ordered joint
  ``sum_i log p(a_i) - log(1 - sum_{j<i} p(a_j))`` (:func:`topk_log_prob`).
- :class:`RolloutBuffer`: steps (state, skill embeddings, action, log-prob, value, shaping
  reward); an episode ends with its delayed reward, part of it spread over the episode's steps
  (:func:`spread_final_reward`).
- :class:`PPOTrainer`: GAE per episode (:func:`gae`), advantages normalised once over the
  batch, ``ppo_epochs`` passes of shuffled minibatches, loss = clipped surrogate
  (:func:`clipped_surrogate`) + ``value_coef`` x value loss (:func:`value_loss`) -
  ``entropy_coef`` x entropy, Adam, gradients clipped to ``max_grad_norm``, the epochs stop early
  when the epoch's mean approximate KL passes ``target_kl``; weights saved as JSON-safe base64
  (:meth:`PPOTrainer.to_state`).
"""

from __future__ import annotations

import base64
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

EPS = 1e-8


@dataclass
class PPOConfig:
    """The controller's hyperparameters (defaults: MemSkill ``src/config.py`` and its ALFWorld
    training script; see ``conf/method/memskill.yaml``)."""

    hidden_dim: int = 256
    lr: float = 1e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_epsilon: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    vf_clip: float = 0.0
    ppo_epochs: int = 2
    minibatch_size: int = 32
    target_kl: float = 0.02
    max_grad_norm: float = 0.5
    batch_episodes: int = 16
    top_k: int = 3


# -- the math, on plain arrays (hand-checkable) --------------------------------------------------
def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    dones: np.ndarray,
    gamma: float,
    lam: float,
    last_value: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(returns, advantages): ``delta_t = r_t + gamma V_{t+1} (1 - done_t) - V_t``,
    ``A_t = delta_t + gamma lam (1 - done_t) A_{t+1}``, ``R_t = A_t + V_t``; an episode boundary
    (``done``) stops both the bootstrap and the advantage carried back."""
    n = len(rewards)
    adv = np.zeros(n, dtype=np.float64)
    carry = 0.0
    for t in reversed(range(n)):
        following = last_value if t == n - 1 else float(values[t + 1])
        alive = 1.0 - float(dones[t])
        delta = float(rewards[t]) + gamma * following * alive - float(values[t])
        carry = delta + gamma * lam * alive * carry
        adv[t] = carry
    return adv + np.asarray(values, dtype=np.float64), adv


def clipped_surrogate(
    new_log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    clip_epsilon: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(policy loss, ratio): ``-mean(min(rho A, clip(rho, 1-eps, 1+eps) A))`` with
    ``rho = exp(new - old)``."""
    ratio = torch.exp(new_log_prob - old_log_prob)
    clipped = torch.clamp(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    return -torch.min(ratio * advantages, clipped * advantages).mean(), ratio


def value_loss(
    values: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor, vf_clip: float
) -> torch.Tensor:
    """``0.5 mean((V - R)^2)``; with ``vf_clip > 0`` the larger of that and the error of
    ``V_old + clip(V - V_old, -c, c)``."""
    plain = (values - returns) ** 2
    if vf_clip > 0:
        moved = old_values + torch.clamp(values - old_values, -vf_clip, vf_clip)
        plain = torch.max(plain, (moved - returns) ** 2)
    return 0.5 * plain.mean()


def topk_log_prob(logits: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """Log-probability of drawing ``actions`` ([B, K], in order) without replacement from
    ``softmax(logits)`` ([B, N]): ``sum_i log p(a_i) - log(1 - sum_{j<i} p(a_j))``."""
    probs = torch.softmax(logits, dim=-1)
    picked = torch.gather(probs, -1, actions)
    total = torch.zeros(logits.shape[0], dtype=logits.dtype)
    left = torch.ones(logits.shape[0], dtype=logits.dtype)
    for i in range(actions.shape[1]):
        p = picked[:, i].clamp(min=EPS)
        total = total + torch.log(p) - torch.log(left.clamp(min=EPS))
        left = (left - p).clamp(min=EPS)
    return total


def spread_final_reward(
    rewards: list[float], final: float, decay: float, last_ratio: float
) -> list[float]:
    """An episode's shaping rewards with its delayed reward ``final`` added: ``last_ratio`` of
    it on the last step, the rest over all steps with weights ``decay^(L-1-i)`` (normalised),
    later steps getting more; a one-step episode takes it all."""
    out = list(rewards)
    if not out:
        return out
    if len(out) == 1:
        out[-1] += final
        return out
    last_ratio = min(max(last_ratio, 0.0), 1.0)
    rest = final * (1.0 - last_ratio)
    weights = np.asarray([decay ** (len(out) - 1 - i) for i in range(len(out))])
    weights = weights / weights.sum()
    out = [r + rest * float(w) for r, w in zip(out, weights, strict=True)]
    out[-1] += final * last_ratio
    return out


@dataclass
class ShapingConfig:
    """The per-step process reward (MemSkill ``src/config.py``: ``process_budget``,
    ``failure_budget``, ``noop_match_scale``) and the delayed reward's spreading
    (``redistribute_reward``, ``reward_redistribution_decay``, ``final_reward_last_ratio``)."""

    process_budget: float = 0.10
    failure_budget: float = 0.05
    noop_match_scale: float = 0.2
    redistribute: bool = True
    decay: float = 0.9
    last_ratio: float = 0.6


def process_reward(
    selected: set[str], results: list[tuple[str, bool]], length: int, cfg: ShapingConfig
) -> float:
    """A step's shaping reward from the operation types of the selected skills and the
    executor's results ``(type, ok)``: with ``q = process_budget / L``, every result failed:
    ``-failure_budget / L``; no result: 0; the types done (of the ok results) equal to the
    selected ones: ``q`` (``noop_match_scale q`` for NOOP alone); overlapping: ``q`` x
    intersection / union (x ``noop_match_scale`` when the overlap is NOOP alone); disjoint:
    ``-q``."""
    steps = max(int(length), 1)
    quota = cfg.process_budget / steps
    done = {kind for kind, ok in results if ok}
    if results and not done:
        return -cfg.failure_budget / steps
    if not results:
        return 0.0
    if selected == done:
        return cfg.noop_match_scale * quota if selected == {"noop"} else quota
    both = selected & done
    if not both:
        return -quota
    share = quota * len(both) / len(selected | done)
    return cfg.noop_match_scale * share if both == {"noop"} else share


# -- the network --------------------------------------------------------------------------------
class PolicyValueNet(nn.Module):
    def __init__(self, state_dim: int, op_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.state_net = nn.Sequential(
            nn.Linear(state_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, hidden_dim),
            nn.ReLU(),
        )
        self.op_net = nn.Sequential(
            nn.Linear(op_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, hidden_dim), nn.ReLU()
        )
        self.actor = nn.Sequential(
            nn.Linear(2 * hidden_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1)
        )
        self.critic = nn.Sequential(
            nn.Linear(hidden_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1)
        )

    def forward(
        self, states: torch.Tensor, ops: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits [B, N] (masked slots -inf) and values [B] for states [B, S] and skill
        embeddings [B, N, D]."""
        s = self.state_net(states)
        o = self.op_net(ops)
        pairs = torch.cat([s.unsqueeze(1).expand(-1, o.shape[1], -1), o], dim=-1)
        logits = self.actor(pairs).squeeze(-1)
        if mask is not None:
            logits = logits.masked_fill(mask == 0, float("-inf"))
        return logits, self.critic(s).squeeze(-1)


# -- rollouts ------------------------------------------------------------------------------------
@dataclass
class Step:
    state: np.ndarray
    ops: np.ndarray  # [N, D]
    action: list[int]
    log_prob: float
    value: float
    reward: float = 0.0
    done: bool = False


@dataclass
class RolloutBuffer:
    """Finished episodes (``steps`` up to the last ``done``) and the open one after them."""

    steps: list[Step] = field(default_factory=list)
    episodes: int = 0

    def push(self, step: Step) -> None:
        self.steps.append(step)

    def open_steps(self) -> list[Step]:
        last = max((i for i, s in enumerate(self.steps) if s.done), default=-1)
        return self.steps[last + 1 :]

    def finish_episode(self, final_reward: float, shaping: ShapingConfig) -> bool:
        """Close the open episode with its delayed reward; False when it has no step."""
        open_steps = self.open_steps()
        if not open_steps:
            return False
        rewards = [s.reward for s in open_steps]
        if shaping.redistribute:
            rewards = spread_final_reward(rewards, final_reward, shaping.decay, shaping.last_ratio)
        else:
            rewards[-1] += final_reward
        for s, r in zip(open_steps, rewards, strict=True):
            s.reward = float(r)
        open_steps[-1].done = True
        self.episodes += 1
        return True

    def take_finished(self) -> list[Step]:
        """The finished episodes' steps, removed (the open episode stays)."""
        last = max((i for i, s in enumerate(self.steps) if s.done), default=-1)
        done, self.steps = self.steps[: last + 1], self.steps[last + 1 :]
        self.episodes = 0
        return done

    def drop_open(self) -> int:
        """Discard the open episode (its delayed reward never came); the steps dropped."""
        open_steps = self.open_steps()
        del self.steps[len(self.steps) - len(open_steps) :]
        return len(open_steps)


# -- acting and training -------------------------------------------------------------------------
def _encode(t: torch.Tensor) -> dict[str, Any]:
    array = t.detach().cpu().numpy().astype("<f4")
    return {"shape": list(array.shape), "b64": base64.b64encode(array.tobytes()).decode("ascii")}


def _decode(d: dict[str, Any]) -> torch.Tensor:
    raw = np.frombuffer(base64.b64decode(d["b64"]), dtype="<f4").reshape(d["shape"])
    return torch.from_numpy(raw.astype(np.float32).copy())


class PPOTrainer:
    """The policy/value network, its Adam optimiser and the update (module docstring). Torch
    work runs on the CPU with its own seeded generators (initialisation, Gumbel draws, minibatch
    order), so a run is deterministic for its ``seed``."""

    def __init__(self, state_dim: int, op_dim: int, cfg: PPOConfig, seed: int = 0) -> None:
        self.cfg, self.seed = cfg, int(seed)
        self.state_dim, self.op_dim = int(state_dim), int(op_dim)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.net = PolicyValueNet(self.state_dim, self.op_dim, cfg.hidden_dim)
        self.optimizer: torch.optim.Optimizer | None = None
        self.updates = 0  # PPO updates made
        self.draws = 0  # sampled actions (seeds each Gumbel draw)
        self.last_info: dict[str, float] = {}

    # -- acting
    def act(
        self, state: np.ndarray, ops: np.ndarray, sample: bool
    ) -> tuple[list[int], float, float]:
        """(skill indices, their joint log-probability, the state value): K drawn by Gumbel
        top-K when ``sample``, else the K largest logits."""
        with torch.no_grad():
            logits, value = self.net(
                torch.as_tensor(state, dtype=torch.float32)[None],
                torch.as_tensor(ops, dtype=torch.float32)[None],
            )
            logits = logits[0]
            k = max(1, min(int(self.cfg.top_k), logits.shape[0]))
            scores = logits
            if sample:
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.draws)
                self.draws += 1
                u = torch.rand(logits.shape, generator=gen).clamp(EPS, 1.0 - EPS)
                scores = logits - torch.log(-torch.log(u))
            action = torch.topk(scores, k).indices
            log_prob = topk_log_prob(logits[None], action[None])[0]
        return [int(a) for a in action], float(log_prob), float(value[0])

    def probabilities(self, state: np.ndarray, ops: np.ndarray) -> np.ndarray:
        """softmax over the skills for one state (inspection and tests)."""
        with torch.no_grad():
            logits, _ = self.net(
                torch.as_tensor(state, dtype=torch.float32)[None],
                torch.as_tensor(ops, dtype=torch.float32)[None],
            )
        return torch.softmax(logits[0], dim=-1).numpy()

    # -- training
    def batch_tensors(self, steps: list[Step]) -> dict[str, torch.Tensor]:
        """States, skill embeddings padded to the batch's largest bank (with the mask),
        actions, old log-probs and values of ``steps``."""
        n_ops = max(s.ops.shape[0] for s in steps)
        ops = np.zeros((len(steps), n_ops, self.op_dim), dtype=np.float32)
        mask = np.zeros((len(steps), n_ops), dtype=np.float32)
        for i, s in enumerate(steps):
            ops[i, : s.ops.shape[0]] = s.ops
            mask[i, : s.ops.shape[0]] = 1.0
        width = max(len(s.action) for s in steps)
        actions = [list(s.action) for s in steps]
        if any(len(a) != width for a in actions):
            raise ValueError(
                "memskill PPO: every step of a batch selects the same number of skills"
            )
        return {
            "states": torch.as_tensor(np.stack([s.state for s in steps]), dtype=torch.float32),
            "ops": torch.from_numpy(ops),
            "mask": torch.from_numpy(mask),
            "actions": torch.as_tensor(actions, dtype=torch.long),
            "old_log_probs": torch.as_tensor([s.log_prob for s in steps], dtype=torch.float32),
            "old_values": torch.as_tensor([s.value for s in steps], dtype=torch.float32),
        }

    def loss(
        self,
        batch: dict[str, torch.Tensor],
        returns: torch.Tensor,
        advantages: torch.Tensor,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The PPO loss of a minibatch and its parts."""
        logits, values = self.net(batch["states"], batch["ops"], batch["mask"])
        new_log_probs = topk_log_prob(logits, batch["actions"])
        probs = torch.softmax(logits, dim=-1)
        entropy = -(probs * torch.log(probs.clamp(min=EPS))).sum(-1)
        policy, ratio = clipped_surrogate(
            new_log_probs, batch["old_log_probs"], advantages, self.cfg.clip_epsilon
        )
        v_loss = value_loss(values, returns, batch["old_values"], self.cfg.vf_clip)
        total = policy + self.cfg.value_coef * v_loss - self.cfg.entropy_coef * entropy.mean()
        with torch.no_grad():
            info = {
                "policy_loss": policy.item(),
                "value_loss": v_loss.item(),
                "entropy": entropy.mean().item(),
                "approx_kl": (batch["old_log_probs"] - new_log_probs).mean().item(),
                "clip_frac": ((ratio - 1.0).abs() > self.cfg.clip_epsilon).float().mean().item(),
            }
        return total, info

    def returns_and_advantages(self, steps: list[Step]) -> tuple[np.ndarray, np.ndarray]:
        """GAE over the steps (episodes split at ``done``), advantages normalised once over
        the whole batch (MemSkill: before the minibatch split)."""
        returns, adv = gae(
            np.asarray([s.reward for s in steps]),
            np.asarray([s.value for s in steps]),
            np.asarray([s.done for s in steps], dtype=np.float64),
            self.cfg.gamma,
            self.cfg.gae_lambda,
        )
        if len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + EPS)
        return returns, adv

    def update(self, steps: list[Step]) -> dict[str, float]:
        """One PPO update on finished episodes; the mean of the minibatches' loss parts."""
        if not steps:
            return {}
        if self.optimizer is None:
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=self.cfg.lr)
        returns, adv = self.returns_and_advantages(steps)
        gen = torch.Generator().manual_seed(self.seed * 7_919 + self.updates)
        size = self.cfg.minibatch_size if self.cfg.minibatch_size > 0 else len(steps)
        sums: dict[str, float] = {}
        n = 0
        for _ in range(max(1, int(self.cfg.ppo_epochs))):
            order = torch.randperm(len(steps), generator=gen).tolist()
            kls = []
            for start in range(0, len(steps), size):
                rows = order[start : start + size]
                batch = self.batch_tensors([steps[i] for i in rows])
                total, info = self.loss(
                    batch,
                    torch.as_tensor(returns[rows], dtype=torch.float32),
                    torch.as_tensor(adv[rows], dtype=torch.float32),
                )
                self.optimizer.zero_grad()
                total.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), self.cfg.max_grad_norm)
                self.optimizer.step()
                for key, value in info.items():
                    sums[key] = sums.get(key, 0.0) + value
                kls.append(info["approx_kl"])
                n += 1
            if self.cfg.target_kl > 0 and sum(kls) / len(kls) > self.cfg.target_kl:
                break
        self.updates += 1
        self.last_info = {k: v / n for k, v in sums.items()} | {"minibatches": float(n)}
        return self.last_info

    # -- checkpoint
    def to_state(self) -> dict[str, Any]:
        """The checkpoint as JSON values: dimensions, hyperparameters, counters and the
        weights (little-endian float32, base64). The optimiser is not kept: the controller is
        frozen once acquisition ends, and a resumed acquisition replays from the start."""
        return {
            "state_dim": self.state_dim,
            "op_dim": self.op_dim,
            "seed": self.seed,
            "config": asdict(self.cfg),
            "updates": self.updates,
            "draws": self.draws,
            "weights": {k: _encode(v) for k, v in self.net.state_dict().items()},
        }

    @staticmethod
    def from_state(state: dict[str, Any]) -> PPOTrainer:
        trainer = PPOTrainer(
            state["state_dim"], state["op_dim"], PPOConfig(**state["config"]), state["seed"]
        )
        trainer.net.load_state_dict({k: _decode(v) for k, v in state["weights"].items()})
        trainer.updates, trainer.draws = int(state["updates"]), int(state["draws"])
        return trainer

    def n_parameters(self) -> int:
        return sum(math.prod(p.shape) for p in self.net.parameters())
