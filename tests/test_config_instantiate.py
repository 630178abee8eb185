"""Every option of every config group is instantiated, and every key of the composed config is
one that something takes (lightning-hydra-template style). Heavy services have cheap
stand-ins: a fake ``vllm`` package, a fake sentence-transformers model, a memory LLM / embedder
test double, a tiny local Wikipedia corpus, a dummy API key. A misspelled key in any group ends
the run before any work with one message naming the key, where it was set and the valid keys.
"""

from __future__ import annotations

import json
import shutil

import pytest
from doubles import FakeEmbedder, FakeLLM
from fake_vllm import install as install_fake_vllm
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from conftest import CONF, MODELS_DIR, compose_cfg, run_py
from memarena.agent import Policy, as_policy
from memarena.config_check import group_options
from memarena.core import ConfigError, Env, MemoryMethod, MemoryServices, runtime
from memarena.pipeline.build import build_part, check_config
from memarena.pipeline.protocol import ProtocolSettings
from memarena.pipeline.validate import accepted_keys, validate


class FakeSentenceTransformer:
    """Stands in for sentence_transformers.SentenceTransformer (no weights are read)."""

    def __init__(self, ref, device=None, local_files_only=False, **kwargs):
        self.ref, self.max_seq_length = ref, 256

    def get_sentence_embedding_dimension(self) -> int:
        return 8

    def eval(self):
        return self


@pytest.fixture
def standins(monkeypatch, tmp_path):
    """The heavy services replaced; a results/cache folder of the test's own."""
    install_fake_vllm(monkeypatch)
    monkeypatch.setattr(runtime, "SHARED_MODELS", runtime.SharedModels())
    monkeypatch.setattr("memarena.llm.hf_loading.local_weights", lambda *a, **k: str(tmp_path))
    import sentence_transformers

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", FakeSentenceTransformer)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"title": "Kestrel Bay", "text": "A town."}) + "\n")
    paths = [f"paths.cache_dir={tmp_path / 'cache'}", f"paths.results_dir={tmp_path}",
             f"paths.models_dir={MODELS_DIR}"]  # the embedded model converted once  # fmt: skip
    return paths, corpus


def _options(group: str) -> list[str]:
    return group_options(CONF, group)


def _compose(overrides: list[str]):
    cfg = compose_cfg(overrides, return_hydra_config=True)
    choices = dict(cfg.hydra.runtime.choices)
    body = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    validate(body, choices, overrides)  # strict keys: raises on any unknown key
    check_config(body)
    ProtocolSettings.from_config(OmegaConf.to_container(body.protocol, resolve=True))
    return body


def _method(cfg) -> MemoryMethod:
    services = MemoryServices(llm_factory=FakeLLM, embedder_factory=FakeEmbedder)
    memory = build_part(cfg.method, services=services, env_name=cfg.env.name)
    assert isinstance(memory, MemoryMethod)
    return memory


@pytest.mark.parametrize("option", _options("method"))
def test_every_method_is_built(standins, option, tmp_path):
    extra, _ = standins
    if option == "memskill_as_released":  # the released controller needs its checkpoint
        from memskill_checkpoint import write_checkpoint

        extra = [*extra, f"method.checkpoint={write_checkpoint(tmp_path / 'controller.pt')}"]
    cfg = _compose([f"method={option}", "env=pddl", *extra])
    memory = _method(cfg)
    if "mode" not in cfg.method:
        # NoMemory's name is "none" too; a preset of another method's settings keeps that
        # method's name in result paths (gmemory_memco: G-Memory as MemCo's code runs it)
        assert memory.name == cfg.method.name
        assert option == memory.name or option.startswith(f"{memory.name}_")
        return
    # a baseline with modes (parity / faithful, full / lite) puts its mode in its name, so in
    # result paths; every mode is built
    base = option.removesuffix(f"_{memory.mode}")  # amem_lite: amem with its mode preset
    assert memory.name == f"{base}_{cfg.method.mode}" == f"{base}_{memory.mode}"
    for other in type(memory).MODES:
        cfg = _compose([f"method={option}", f"method.mode={other}", "env=pddl", *extra])
        assert _method(cfg).name == f"{base}_{other}"


@pytest.mark.parametrize("option", [o for o in _options("ablation") if o != "none"])
def test_every_ablation_is_built_with_its_method(standins, option):
    extra, _ = standins
    overrides = [f"ablation={option}", *extra]
    if "/" in option:
        overrides.append(f"method={option.split('/')[0]}")
    if option.startswith("reme/summ_"):  # it names the memory backbone its experiment chooses
        overrides.append(f"memory_backbone={option.removeprefix('reme/summ_')}")
    _method(_compose(overrides))


@pytest.mark.parametrize("option", _options("env"))
def test_every_env_is_built(standins, option):
    extra, _ = standins
    cfg = _compose([f"env={option}", "method=none", *extra])
    env = build_part(cfg.env)
    try:  # the env carries the name and budget its config gives (e.g. alfworld_suite, 30)
        assert isinstance(env, Env)
        assert (env.name, env.step_budget) == (cfg.env.name, cfg.env.step_budget)
    finally:
        env.close()


@pytest.mark.parametrize("option", _options("env/wiki"))
def test_every_wikipedia_backend_is_built(standins, option):
    extra, corpus = standins
    overrides = ["env=fever", f"env/wiki={option}", "method=none", *extra]
    if option == "local":
        overrides.append(f"env.wiki.path={corpus}")
    if option == "replay":  # a recorded search cache (empty)
        from memarena.envs.wiki.cache import SearchCache

        SearchCache(corpus.parent / "searches.sqlite")
        overrides.append(f"env.wiki.cache_path={corpus.parent / 'searches.sqlite'}")
    if option != "smoke":  # real backends need a real dataset: here only the backend is built
        overrides += ["env.dataset=official", f"env.path={corpus}"]
    cfg = _compose(overrides)
    assert build_part(cfg.env.wiki).name == option


@pytest.mark.parametrize("option", _options("backbone"))
def test_every_backbone_is_built_as_a_policy(standins, option):
    extra, _ = standins
    cfg = _compose([f"backbone={option}", "method=none", *extra])
    policy = as_policy(build_part(cfg.backbone))
    try:
        assert isinstance(policy, Policy) and policy.name == cfg.backbone.name
        assert policy.is_llm == (option != "scripted")
    finally:
        policy.close()
    assert runtime.held() == {}  # closing gave every model and engine back


@pytest.mark.parametrize("option", _options("memory_backbone"))
def test_every_memory_backbone_is_built(standins, option):
    extra, _ = standins
    cfg = _compose([f"memory_backbone={option}", "method=reme", *extra])
    node = cfg.memory_backbone
    if node.get("same_as_agent"):
        node = node.fallback
    else:
        node = OmegaConf.create({k: node[k] for k in node if k != "same_as_agent"})
    llm = build_part(node)
    llm.close()


@pytest.mark.parametrize("option", _options("embedder"))
def test_every_embedder_is_built(standins, option):
    extra, _ = standins
    embedder = build_part(_compose([f"embedder={option}", *extra]).embedder)
    assert embedder.dim == 8  # the stand-in model's
    embedder.close()


@pytest.mark.parametrize("option", _options("protocol") + _options("logger"))
def test_every_protocol_and_logger_option(standins, option):
    extra, _ = standins
    group = "protocol" if option in _options("protocol") else "logger"
    cfg = _compose([f"{group}={option}", *extra])
    if group == "logger":
        build_part(cfg.logger).finish()


@pytest.mark.parametrize("option", _options("experiment"))
def test_every_experiment_builds_its_method_and_env(standins, option):
    extra, _ = standins
    cfg = _compose([f"experiment={option}", *extra])
    _method(cfg)
    try:
        build_part(cfg.env).close()
    except ConfigError as err:  # the paper's data is a download the user points at
        hints = ("env.require_data=false", "env.path", "env/wiki=")
        assert any(hint in str(err) for hint in hints), err


def test_no_target_swallows_unknown_keys():
    """Every _target_ of every config file names its keyword arguments (no **kwargs at the
    end of the MRO), so the key check can refuse a typo."""
    for path in sorted(CONF.rglob("*.yaml")):
        text = path.read_text()
        for line in text.splitlines():
            if line.startswith("_target_:"):
                target = line.split(":", 1)[1].split("#")[0].strip()
                keys, name = accepted_keys(target)
                assert keys is not None, f"{path}: {name} takes **kwargs"


# --------------------------------------------------------------------------------------------
# the typo message


@pytest.mark.parametrize(
    ("override", "names"),
    [
        ("+method.treshold=0.9", ["method.treshold", "method.threshold", "alpha"]),
        ("method.treshold=0.9", ["method.treshold", "method.threshold", "alpha"]),
        ("+env.step_budjet=3", ["env.step_budjet", "env.step_budget", "domains"]),
        ("+backbone.epsilom=0.2", ["backbone.epsilom", "backbone.epsilon", "seed"]),
        ("+ablation.methd=memco", ["ablation.methd", "ablation.method", "name"]),
        ("+protocol.concurency=2", ["protocol.concurency", "protocol.concurrency"]),
    ],
)
def test_a_misspelled_key_stops_run_py_before_any_work(tmp_path, override, names):
    proc = run_py(
        ["method=memco", "env=pddl", "backbone=scripted", override, "logger=none",
         f"paths.results_dir={tmp_path}"],
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    message = proc.stdout + proc.stderr
    for name in names:
        assert name in message, message
    assert "Traceback" not in message
    assert not any(tmp_path.iterdir())  # nothing was built, no run directory was made


def test_the_message_names_the_file_a_misspelled_key_came_from(tmp_path):
    """A typo inside an ablation file (a @package _global_ file setting method keys) is named
    with that file."""
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    typo = conf / "ablation" / "memco" / "typo.yaml"
    typo.write_text(
        "# @package _global_\nablation:\n  name: typo\n  method: memco\nmethod:\n  treshold: 0.9\n"
    )
    GlobalHydra.instance().clear()
    overrides = ["method=memco", "ablation=memco/typo"]
    with initialize_config_dir(config_dir=str(conf), version_base=None):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    body = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    with pytest.raises(ConfigError) as err:
        validate(body, dict(cfg.hydra.runtime.choices), overrides, conf)
    message = str(err.value)
    assert "method.treshold (set in conf/ablation/memco/typo.yaml)" in message
    assert "Did you mean method.threshold?" in message and "k_local" in message


def test_constructors_refuse_unknown_keys_too():
    """Without the check, Python itself refuses: no constructor swallows a key."""
    from memarena.memory.memco import MemCo

    with pytest.raises(TypeError, match="treshold"):
        MemCo(env_name="pddl", treshold=0.9)
    assert MemCo(env_name="pddl", threshold=0.9).threshold == 0.9  # the right key is taken
