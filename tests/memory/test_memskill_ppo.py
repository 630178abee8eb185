"""MemSkill's PPO controller (memarena/memory/memskill/ppo.py) on hand-checkable numbers: GAE
advantages and returns, the clipped ratio, the value loss, the top-K log-probability, the
process reward and the delayed reward's spreading; an update on a tiny network; a checkpoint
that gives the same action probabilities."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from memarena.memory.memskill.ppo import (
    PPOConfig,
    PPOTrainer,
    RolloutBuffer,
    ShapingConfig,
    Step,
    clipped_surrogate,
    gae,
    process_reward,
    spread_final_reward,
    topk_log_prob,
    value_loss,
)


def test_gae_advantages_and_returns_by_hand():
    # gamma = lambda = 0.5, V = [0.5, 0.5], r = [0, 1], the episode ends at t = 1
    # t=1: delta = 1 + 0 - 0.5 = 0.5;             A1 = 0.5
    # t=0: delta = 0 + 0.5 * 0.5 - 0.5 = -0.25;   A0 = -0.25 + 0.5 * 0.5 * 0.5 = -0.125
    # R = A + V = [0.375, 1.0]
    returns, adv = gae(np.array([0.0, 1.0]), np.array([0.5, 0.5]), np.array([0, 1]), 0.5, 0.5)
    assert adv == pytest.approx([-0.125, 0.5]) and returns == pytest.approx([0.375, 1.0])


def test_gae_stops_at_an_episode_boundary():
    # gamma = lambda = 1, V = 0: episode 1 is step 0 (r 0), episode 2 steps 1-2 (r 0, 1)
    # t=2: A = 1; t=1: A = 0 + 1 * 1 = 1; t=0 (done): A = 0, nothing carried back
    _, adv = gae(np.array([0.0, 0.0, 1.0]), np.zeros(3), np.array([1, 0, 1]), 1.0, 1.0)
    assert adv == pytest.approx([0.0, 1.0, 1.0])


def test_clipped_surrogate_by_hand():
    # rho = [1.5, 0.5], A = [+1, -1], eps = 0.2
    # step 0: min(1.5 * 1, 1.2 * 1) = 1.2;  step 1: min(0.5 * -1, 0.8 * -1) = -0.8
    # loss = -(1.2 - 0.8) / 2 = -0.2
    old = torch.tensor([0.0, 0.0])
    new = torch.log(torch.tensor([1.5, 0.5]))
    loss, ratio = clipped_surrogate(new, old, torch.tensor([1.0, -1.0]), 0.2)
    assert ratio.tolist() == pytest.approx([1.5, 0.5])
    assert float(loss) == pytest.approx(-0.2)


def test_value_loss_by_hand_plain_and_clipped():
    # plain: 0.5 * mean((1 - 0)^2, (0 - 2)^2) = 0.5 * 2.5 = 1.25
    values, returns = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])
    assert float(value_loss(values, returns, values, 0.0)) == pytest.approx(1.25)
    # clipped (c = 0.5): V 1, V_old 0, R 2 -> moved 0.5, max((1-2)^2, (0.5-2)^2) = 2.25 -> 1.125
    one = torch.tensor([1.0])
    assert float(value_loss(one, torch.tensor([2.0]), torch.tensor([0.0]), 0.5)) == 1.125


def test_topk_log_prob_draws_without_replacement():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    # (0, 1): log 0.5 + log(0.3 / (1 - 0.5)) = log 0.3
    assert float(topk_log_prob(logits, torch.tensor([[0, 1]]))) == pytest.approx(math.log(0.3))
    # (1, 0): log 0.3 + log(0.5 / 0.7)
    got = float(topk_log_prob(logits, torch.tensor([[1, 0]])))
    assert got == pytest.approx(math.log(0.3 * 0.5 / 0.7), rel=1e-6)


def test_process_reward_by_hand():
    cfg = ShapingConfig()  # budget 0.10, failure 0.05, NOOP scale 0.2
    # L = 2 -> quota 0.05, failure quota 0.025
    assert process_reward({"insert"}, [("insert", True)], 2, cfg) == pytest.approx(0.05)
    assert process_reward({"noop"}, [("noop", True)], 2, cfg) == pytest.approx(0.01)
    # {insert, update} vs done {insert}: 0.05 * 1/2
    both = process_reward({"insert", "update"}, [("insert", True)], 2, cfg)
    assert both == pytest.approx(0.025)
    assert process_reward({"delete"}, [("insert", True)], 2, cfg) == pytest.approx(-0.05)
    assert process_reward({"insert"}, [("insert", False)], 2, cfg) == pytest.approx(-0.025)
    assert process_reward({"insert"}, [], 2, cfg) == 0.0


def test_delayed_reward_spread_over_the_episode():
    # final 1: 0.6 on the last step, 0.4 with weights [0.9, 1] / 1.9
    got = spread_final_reward([0.01, 0.02], 1.0, 0.9, 0.6)
    assert got == pytest.approx([0.01 + 0.4 * 0.9 / 1.9, 0.02 + 0.4 / 1.9 + 0.6])
    assert spread_final_reward([0.5], 1.0, 0.9, 0.6) == [1.5]  # one step takes it all


def test_buffer_closes_episodes_and_keeps_the_open_one():
    buffer, shaping = RolloutBuffer(), ShapingConfig(redistribute=False)
    ops = np.zeros((2, 1), dtype=np.float32)
    buffer.push(Step(np.zeros(2), ops, [0], 0.0, 0.0, reward=0.1))
    assert buffer.finish_episode(1.0, shaping) and buffer.episodes == 1
    assert not buffer.finish_episode(1.0, shaping)  # no open step: nothing to close
    buffer.push(Step(np.zeros(2), ops, [1], 0.0, 0.0))
    finished = buffer.take_finished()
    assert [s.reward for s in finished] == [pytest.approx(1.1)] and finished[0].done
    assert len(buffer.steps) == 1 and buffer.drop_open() == 1 and not buffer.steps


def _tiny(**over) -> PPOTrainer:
    cfg = PPOConfig(hidden_dim=16, top_k=1, ppo_epochs=1, minibatch_size=0, target_kl=0.0)
    for key, value in over.items():
        setattr(cfg, key, value)
    return PPOTrainer(state_dim=2, op_dim=2, cfg=cfg, seed=3)


def test_first_minibatch_loss_is_the_hand_formula_and_the_update_moves_the_policy():
    trainer = _tiny(lr=0.05, entropy_coef=0.0)
    ops = np.array([[1.0, -0.5], [-0.3, 0.8]], dtype=np.float32)
    state = np.array([1.0, 0.0], np.float32)
    probs = trainer.probabilities(state, ops)
    _, _, value = trainer.act(state, ops, sample=False)
    # two one-step episodes from the same state: skill 0 earned 0, skill 1 earned 1
    steps = [
        Step(state, ops, [a], float(np.log(probs[a])), value, reward=r, done=True)
        for a, r in ((0, 0.0), (1, 1.0))
    ]
    returns, adv = trainer.returns_and_advantages(steps)
    # done steps: A = r - V, R = r; normalised over the batch: [-1, 1]
    assert returns == pytest.approx([0.0, 1.0], abs=1e-6)
    assert adv == pytest.approx([-1.0, 1.0], abs=1e-6)
    batch = trainer.batch_tensors(steps)
    _, info = trainer.loss(batch, torch.tensor(returns, dtype=torch.float32),
                           torch.tensor(adv, dtype=torch.float32))  # fmt: skip
    # before any update rho = 1: policy loss = -mean(A) = 0, approximate KL 0;
    # value loss = 0.5 * mean((V - 0)^2, (V - 1)^2)
    assert info["policy_loss"] == pytest.approx(0.0, abs=1e-6)
    assert info["approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert info["value_loss"] == pytest.approx(0.5 * (value**2 + (value - 1) ** 2) / 2, rel=1e-5)
    trainer.update(steps)
    assert trainer.updates == 1
    assert trainer.probabilities(state, ops)[1] > probs[1]  # the rewarded skill is likelier


def test_checkpoint_round_trip_gives_identical_probabilities():
    trainer = _tiny()
    ops = np.array([[0.3, -1.0], [0.7, 0.2], [-0.5, 0.5]], dtype=np.float32)
    state = np.array([0.25, -0.75], np.float32)
    trainer.act(state, ops, sample=True)
    again = PPOTrainer.from_state(json.loads(json.dumps(trainer.to_state())))
    assert np.array_equal(again.probabilities(state, ops), trainer.probabilities(state, ops))
    assert again.draws == trainer.draws == 1
    assert again.act(state, ops, sample=False) == trainer.act(state, ops, sample=False)


def test_same_seed_same_sampled_actions():
    ops = np.eye(2, dtype=np.float32)
    state = np.array([1.0, 0.0], np.float32)
    draws = [[_tiny().act(state, ops, sample=True)[0] for _ in range(1)] for _ in range(2)]
    assert draws[0] == draws[1]
