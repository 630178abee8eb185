"""Method settings as typed data (issue 46): every method's choices and bounds are checked by
the pre-check for every cell of a sweep, before any job starts, from the method's own
``Settings`` (a test generated from them); the constructor takes the same settings.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
import yaml
from hydra.utils import get_object

from conftest import CONF
from memarena.config_check import check_overrides
from memarena.core import ConfigError, MemoryMethod
from memarena.core.settings import MethodSettings, choices_of
from memarena.core.typecheck import ranges


def method_options() -> dict[str, type[MemoryMethod]]:
    """conf/method/<option>.yaml -> the class it builds (an option that inherits another's
    target: that one's)."""
    out = {}
    for path in sorted((CONF / "method").glob("*.yaml")):
        data, seen = yaml.safe_load(path.read_text()) or {}, path
        while "_target_" not in data:  # defaults: [<base option>, _self_]
            base = next(d for d in data["defaults"] if d != "_self_")
            seen = CONF / "method" / f"{base}.yaml"
            data = {**(yaml.safe_load(seen.read_text()) or {}), **data}
        out[path.stem] = get_object(data["_target_"])
    return out


def config_keys(option: str) -> set[str]:
    """The keys conf/method/<option>.yaml gives (with the options it builds on)."""
    data = yaml.safe_load((CONF / "method" / f"{option}.yaml").read_text()) or {}
    keys = set(data) - {"defaults"}
    for base in (d for d in data.get("defaults") or () if d != "_self_"):
        keys |= config_keys(base)
    return keys


OPTIONS = method_options()
CHOICES = [
    (option, f.name, [str(c) for c in choices_of(klass.Settings.hints()[f.name])])
    for option, klass in OPTIONS.items()
    for f in dataclasses.fields(klass.Settings)
    if any(isinstance(c, str) for c in choices_of(klass.Settings.hints()[f.name]))
    and typing.get_origin(klass.Settings.hints()[f.name]) is not tuple
    and f.name in config_keys(option)
]


def test_every_method_declares_its_settings():
    for option, klass in OPTIONS.items():
        assert issubclass(klass.Settings, MethodSettings), option
        assert dataclasses.is_dataclass(klass.Settings), option
        assert klass.Settings.__dataclass_params__.frozen, option
    assert len(CHOICES) > 30  # every method with a choice has its fields here


@pytest.mark.parametrize(
    ("option", "key", "valid"), CHOICES, ids=[f"{o}.{k}" for o, k, _ in CHOICES]
)
def test_a_misspelled_choice_in_a_sweep_is_refused_before_any_job(option, key, valid):
    good = next(c for c in valid if c != "null")
    bad = good + "x"
    error = check_overrides([f"method={option}", f"method.{key}={good},{bad}"], CONF)
    assert error is not None, (option, key)
    assert f"method.{key}={bad!r} must be one of" in error
    assert all(repr(c) in error for c in valid if c != "null")
    assert f"Did you mean {good!r}?" in error and error.endswith("the run did not start.")


BOUNDED = [
    (option, f.name, bound)
    for option, klass in OPTIONS.items()
    for f in dataclasses.fields(klass.Settings)
    for bound in ranges(klass.Settings.hints()[f.name])[:1]
    if (bound.ge is not None or bound.gt is not None) and f.name in config_keys(option)
]


@pytest.mark.parametrize(("option", "key", "bound"), BOUNDED[:: max(1, len(BOUNDED) // 12)])
def test_a_number_below_its_bound_is_refused_before_any_job(option, key, bound):
    low = (bound.ge if bound.ge is not None else bound.gt) - 1
    error = check_overrides([f"method={option}", f"method.{key}={int(low)}"], CONF)
    assert error is not None and f"method.{key}={int(low)}" in error, (option, key, error)
    assert bound.text() in error


def test_the_constructor_takes_the_settings_or_their_fields():
    from memarena.memory.reme import ReMe
    from memarena.memory.reme.settings import ReMeSettings

    given = ReMeSettings(top_k=2, extraction="trajectory")
    assert ReMe(given).settings.top_k == 2 == ReMe(top_k=2).settings.top_k
    with pytest.raises(TypeError, match="not both"):
        ReMe(given, top_k=3)
    with pytest.raises(ConfigError, match="method.extraction='keypoints' must be one of"):
        ReMe(extraction="keypoints")
    with pytest.raises(TypeError, match="unexpected keyword arguments: \\['topk'\\]"):
        ReMe(topk=3)


def test_no_hand_written_choice_checks_remain():
    src = Path(__file__).resolve().parents[1] / "src" / "memarena" / "memory"
    assert not [p for p in src.rglob("*.py") if "def _choice(" in p.read_text()]


@pytest.mark.parametrize("option", sorted(OPTIONS))
def test_per_domain_teams_carry_every_capability_and_the_settings(option, tmp_path):
    """protocol.domain_memories=per_domain wraps a method in a DomainTeam: the pipeline then
    reads the team, which must be the method as a whole (every Capabilities field, whatever
    fields it gains, and the resolved settings)."""
    from doubles import FakeEmbedder, FakeLLM

    from conftest import compose_cfg
    from memarena.core import Capabilities, MemoryServices
    from memarena.memory.team import DomainTeam
    from memarena.pipeline.build import build_part

    extra = []
    if option == "memskill_as_released":  # the released controller needs its checkpoint
        from memskill_checkpoint import write_checkpoint

        extra = [f"method.checkpoint={write_checkpoint(tmp_path / 'controller.pt')}"]
    cfg = compose_cfg([f"method={option}", "env=pddl", *extra])
    services = MemoryServices(llm_factory=FakeLLM, embedder_factory=FakeEmbedder)

    def build():
        return build_part(cfg.method, services=services, env_name=cfg.env.name)

    member = build()
    team = DomainTeam(build, member)
    assert isinstance(team.capabilities, Capabilities)
    assert team.capabilities == member.capabilities
    assert team.settings == member.settings and team.name == member.name
    for f in dataclasses.fields(Capabilities):  # the attributes the pipeline reads
        assert getattr(team, f.name) == getattr(member, f.name), f.name


@pytest.mark.parametrize(
    ("env", "reward", "delete_every"),
    [("bfcl", "success", 5), ("appworld", "progress", 1), ("appworld_smoke", "progress", 1),
     ("pddl_generated", "progress", 5)],
)  # fmt: skip
def test_official_readings_resolve_by_the_env_family(env, reward, delete_every):
    """ReMe's released agent for the benchmark: AppWorld's stand-in is AppWorld (it got BFCL's
    deletion period when the lookup took the exact name)."""
    from memarena.memory.reme import ReMe

    memory = ReMe(env_name=env)
    assert (memory.settings.reward, memory.settings.delete_every) == (reward, delete_every)
    assert (memory.reward, memory.delete_every) == (reward, delete_every)
    assert ReMe(env_name=env, delete_every=3).delete_every == 3  # a number is kept as given


def test_cfg_job_names_what_the_run_resolves(tmp_path):
    from conftest import run_py

    proc = run_py(["method=reme", "env=appworld", "--cfg", "job"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "delete_every: official" in out  # Hydra's view of the config, unchanged
    assert (
        "# memarena: method settings resolved when the run is built, for env appworld_smoke" in out
    )
    assert "#   method.delete_every: official -> 1" in out
    assert "#   method.reward: official -> progress" in out


def test_metrics_and_the_snapshot_carry_the_settings(tmp_path):
    import json

    from conftest import run_py

    proc = run_py(["method=memco", "env=pddl", "backbone=scripted", "logger=none",
                   "protocol.max_train_tasks=2", "protocol.max_eval_tasks=1",
                   "method.k_local=2", f"paths.results_dir={tmp_path}"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (metrics,) = tmp_path.rglob("metrics.json")
    written = json.loads(metrics.read_text())
    settings = written["method_settings"]
    assert settings["k_local"] == 2 and settings["facets"] == ["x", "p", "g"]
    assert written["readings"]["protocol.count_retries"] == "memarena"
    snapshot = json.loads((metrics.parent / "memory" / "memory.json").read_text())
    assert snapshot["settings"] == settings


def _reading_fields():
    from memarena.pipeline.protocol import ProtocolSettings

    classes = {f"method={o}": k.Settings for o, k in OPTIONS.items()}
    classes["protocol"] = ProtocolSettings
    for owner, klass in classes.items():
        hints = typing.get_type_hints(klass, include_extras=True)
        for f in dataclasses.fields(klass):
            if f.metadata.get("readings"):
                yield owner, klass, f, hints[f.name]


def test_every_reading_names_its_sources_with_valid_values():
    """A reading (core.settings.reading) names where each value comes from: the released code
    (``released``, or another code's: ``memco_released``), the paper, or memarena; every value
    is one the key takes, and the default is one of them."""
    from memarena.core.settings import SOURCES
    from memarena.core.typecheck import fits

    found = list(_reading_fields())
    assert len({(o, f.name) for o, _, f, _ in found}) >= 20
    for owner, _, f, hint in found:
        sources = f.metadata["readings"]
        assert len(sources) >= 1, (owner, f.name)
        for name, value in sources.items():
            assert name in SOURCES or name.endswith("_released"), (owner, f.name, name)
            assert fits(value, hint), (owner, f.name, name, value)
        assert f.default in sources.values(), (owner, f.name)


def test_a_run_records_which_source_each_reading_follows():
    """MemCo's table runs MemRL twice: as MemCo's released script evaluated it and with its
    learnt memory; each run's readings say which (metrics.json ``readings``)."""
    from doubles import FakeEmbedder, FakeLLM

    from conftest import compose_cfg
    from memarena.core import MemoryServices
    from memarena.core.settings import readings_of
    from memarena.pipeline.build import build_part
    from memarena.pipeline.protocol import ProtocolSettings

    services = MemoryServices(llm_factory=FakeLLM, embedder_factory=FakeEmbedder)
    seen = {}
    for option in ("memrl_as_released", "memrl"):
        cfg = compose_cfg(["experiment=memco_table1_pddl", f"method={option}"])
        seen[option] = build_part(cfg.method, services=services, env_name="pddl").readings
    assert seen["memrl_as_released"]["method.eval_memory"] == "memco_released"
    assert seen["memrl"]["method.eval_memory"] == "memarena"
    dynamic = compose_cfg(["experiment=reme_table1_dynamic", "ablation=reme/dynamic"])
    stricter = compose_cfg(["experiment=reme_table1_dynamic", "ablation=reme/dynamic_memarena"])
    for cfg, source in ((dynamic, "released"), (stricter, "memarena")):
        protocol = ProtocolSettings.from_config(dict(cfg.protocol))
        assert readings_of(protocol, "protocol") == {
            "protocol.count_retries": source, "protocol.memory_across_runs": source,
            "protocol.agent_loop": "memarena",  # ReMe's agents are not G-Memory's loop
            # the released BFCL agent's prompt (conf/experiment/base/reme_bfcl.yaml)
            "protocol.prompt_layout": "released",
        }  # fmt: skip
    evograph = compose_cfg(["experiment=evograph_table1_pddl"])
    protocol = ProtocolSettings.from_config(dict(evograph.protocol))
    assert readings_of(protocol, "protocol")["protocol.agent_loop"] == "released"
    assert readings_of(protocol, "protocol")["protocol.prompt_layout"] == "memarena"
