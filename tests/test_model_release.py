"""A sweep over backbones in one process (Hydra's basic launcher runs the jobs one after the
other in the same process) holds one model at a time: every job gives its agent model, its
memory-side model and its embedder back when it ends, and the next job loads its own."""

from __future__ import annotations

import gc
import weakref

from conftest import MODELS_DIR, compose_cfg
from memarena.core import runtime
from memarena.pipeline import run


def test_each_job_releases_its_models_before_the_next_loads(tmp_path, monkeypatch):
    registry = runtime.SharedModels()
    monkeypatch.setattr(runtime, "SHARED_MODELS", registry)
    loaded: list[tuple[str, weakref.ref]] = []
    held_when_loading: list[dict[str, int]] = []
    acquire = registry.acquire

    def recording_acquire(key, loader, on_drop=None):
        def load():
            held_when_loading.append(registry.held())
            obj = loader()
            target = obj[0] if isinstance(obj, tuple) else obj  # hf: (model, tokenizer)
            loaded.append((key[0], weakref.ref(target)))
            return obj

        return acquire(key, load, on_drop)

    monkeypatch.setattr(registry, "acquire", recording_acquire)
    common = [
        "env=pddl",
        "env.domains=[gripper]",
        "method=gmemory",
        "method.use_llm=false",  # G-Memory's offline mode: the embedder, no memory LLM
        "logger=none",
        "protocol.max_train_tasks=1",
        "protocol.max_eval_tasks=1",
        "protocol.step_budget=2",
        f"paths.results_dir={tmp_path}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"paths.models_dir={MODELS_DIR}",  # the embedded model converted once
        "backbone.cache_path=null",
    ]
    for dtype in ("float32", "bfloat16"):  # two backbones: two model identities
        run(compose_cfg([*common, f"backbone.dtype={dtype}", f"backbone.name=smollm2-{dtype}"]))
        assert registry.held() == {}  # the job gave back everything it loaded
        gc.collect()
        assert all(ref() is None for _, ref in loaded)  # ... and nothing else keeps it alive

    kinds = [kind for kind, _ in loaded]
    assert kinds.count("hf") == 2 and kinds.count("sentence-transformers") == 2
    # the second job's first load found the process empty: one model set at a time
    assert held_when_loading[len(held_when_loading) // 2] == {}
