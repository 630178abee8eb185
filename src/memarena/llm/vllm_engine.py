"""VLLMBackbone: vLLM's offline ``LLM`` engine answering a whole batch in one call.

One ``generate(requests)`` is one ``LLM.generate`` call over every uncached request; vLLM's
scheduler does the continuous batching. Each request gets its own ``SamplingParams``:

- decoding: greedy at temperature 0, else temperature/top-p sampling seeded by the request's
  own seed (so a sample does not depend on what else is in the batch);
- limits: ``max_tokens`` (capped by ``max_new_tokens``) and stop strings (free text only);
- constraint: guided decoding for a choice among admissible actions (``choice=[...]``) and for
  a JSON schema (``json=schema``), through ``StructuredOutputsParams`` (vLLM >= 0.10.2, the
  ``structured_outputs=`` field) or the older ``GuidedDecodingParams`` (``guided_decoding=``),
  whichever the installed vLLM offers.

Chat templating is done here, with the engine's own tokenizer, and the token ids go to
``LLM.generate`` (not ``LLM.chat``): the prompt length is known before the call, so a prompt
that would overflow ``max_model_len`` beside its reply cap is handled by
``prompt_overflow`` (:mod:`memarena.llm.context_fit`: by default sent whole with the reply cap
lowered to the room left, refused when there is none; never cut silently) instead of vLLM
rejecting the whole batch with a ValueError; the template and its
kwargs (``enable_thinking`` for Qwen3) are the same ones the ``hf`` engine applies, so both
engines see the same prompt text (requests with ``tools`` too: the same ``tools`` argument and
``tools_template``, :mod:`memarena.llm.tool_templates`). The token counts come from the
engine's outputs (``prompt_token_ids``, each output's ``token_ids``).

vLLM is imported only when a backbone is built: without it, construction ends with a
ConfigError saying how to install it. Engines are shared inside a process through
``memarena.core.runtime`` (counted by reference), so an agent backbone and a memory backbone
with the same engine settings cost one copy of the weights; ``close()`` gives the backbone's
reference back, and the last one shuts the engine down and frees its GPU memory
(``shutdown_engine``), so a sweep over backbones in one process does not pile engines up.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
from pathlib import Path
from typing import Any

from memarena.core import runtime
from memarena.core.errors import ConfigError
from memarena.core.llm_types import ChatRequest, Completion
from memarena.llm.base import BackboneBase, plain
from memarena.llm.context_fit import (
    Fit,
    check_overflow,
    fit_prompt,
    overflow_identity,
    refusal,
)
from memarena.llm.tool_templates import (
    load_tools_template,
    no_native_tools,
    renders_tools,
    template_args,
)

log = logging.getLogger(__name__)

VLLM_VERSION = "0.33.0"  # the release this engine was written against (pip install vllm==...)
INSTALL_HINT = (
    f"pip install vllm=={VLLM_VERSION} into this venv on a Linux machine with an NVIDIA GPU "
    "(the wheel brings its own CUDA build of torch), then rerun"
)
_DEFAULT_TEMPLATE_KWARGS: tuple[dict[str, Any], ...] = ({}, {"enable_thinking": False})


# -- the vllm module, imported lazily ---------------------------------------------------------
def import_vllm() -> Any:
    """The ``vllm`` module, or a ConfigError saying how to install it."""
    try:
        return importlib.import_module("vllm")
    except ImportError as err:
        raise ConfigError(
            f"memarena: the vllm backbone needs vLLM, which cannot be imported here ({err}). "
            f"{INSTALL_HINT}; or serve the model with scripts/serve_vllm.sh and use "
            "backbone=openai_server; or use backbone=smollm2_135m on a CPU."
        ) from err


def structured_api(vllm: Any) -> tuple[str, Any]:
    """(the SamplingParams field, the params class) for guided decoding in this vLLM.

    Newer vLLM: ``SamplingParams(structured_outputs=StructuredOutputsParams(...))``; older:
    ``SamplingParams(guided_decoding=GuidedDecodingParams(...))``. Both take ``choice=`` and
    ``json=``. The newer one wins when both exist (the older is a deprecated alias there).
    """
    try:
        module = importlib.import_module("vllm.sampling_params")
    except ImportError:
        module = vllm
    for field, cls_name in (
        ("structured_outputs", "StructuredOutputsParams"),
        ("guided_decoding", "GuidedDecodingParams"),
    ):
        cls = getattr(module, cls_name, None) or getattr(vllm, cls_name, None)
        if cls is not None:
            return field, cls
    version = getattr(vllm, "__version__", "?")
    raise ConfigError(
        f"memarena: vLLM {version} has neither StructuredOutputsParams nor GuidedDecodingParams, "
        f"so choices and JSON schemas cannot be enforced. {INSTALL_HINT}."
    )


# -- engines, shared and released ---------------------------------------------------------------
def engine_key(engine_args: dict[str, Any]) -> tuple[str, str]:
    """The key an engine is shared under in ``memarena.core.runtime``."""
    return ("vllm", json.dumps(engine_args, sort_keys=True, default=str))


def load_engine(vllm: Any, engine_args: dict[str, Any]) -> Any:
    """One ``vllm.LLM`` per distinct set of engine arguments in this process.

    Each call takes one reference; give it back with ``runtime.release(engine_key(args))``
    (``VLLMBackbone.close`` does). The last release runs ``shutdown_engine``.
    """

    def loader() -> Any:
        log.info("starting vLLM engine: %s", engine_args)
        return vllm.LLM(**engine_args)

    return runtime.acquire(engine_key(engine_args), loader, on_drop=shutdown_engine)


def shutdown_engine(llm: Any) -> None:
    """Free what a dropped engine holds, as vLLM's own tests and maintainers do it.

    1. Stop the engine: ``llm.shutdown()`` where the installed vLLM has it, else
       ``llm.llm_engine.engine_core.shutdown()`` (the V1 engine-core process and its workers).
    2. When no other vLLM engine is left in this process: ``destroy_model_parallel()`` and
       ``destroy_distributed_environment()`` from ``vllm.distributed.parallel_state`` (the
       parallel groups and the torch.distributed process group vLLM set up).

    Every step runs only where the installed vLLM has it, and a failing step is logged, never
    raised. The registry then drops the object, runs ``gc.collect()`` and empties the CUDA cache.
    """
    stop = getattr(llm, "shutdown", None)
    if not callable(stop):
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        stop = getattr(core, "shutdown", None)
    _guarded(stop, "stopping the vLLM engine")
    if runtime.held("vllm"):
        return  # another engine still uses the distributed state
    try:
        state = importlib.import_module("vllm.distributed.parallel_state")
    except ImportError:
        return
    for name in ("destroy_model_parallel", "destroy_distributed_environment"):
        _guarded(getattr(state, name, None), f"vllm {name}")


def _guarded(step: Any, what: str) -> None:
    if not callable(step):
        return
    try:
        step()
    except Exception as err:  # closing goes on: the process may still free the memory on exit
        log.warning("%s failed: %s", what, err)


# -- the backbone -------------------------------------------------------------------------------
class VLLMBackbone(BackboneBase):
    """An LLM served by vLLM's offline engine inside this process; see the module docstring."""


    def __init__(
        self,
        model: str,
        name: str | None = None,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        dtype: str = "auto",
        enable_thinking: bool | None = False,
        chat_template: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        seed: int = 0,
        trust_remote_code: bool = False,
        download_dir: str | Path | None = None,
        enforce_eager: bool = False,
        max_new_tokens: int | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        cache_path: str | Path | None = None,
        gguf_file: str | None = None,
        converted_dir: str | Path | None = None,
        tools_template: str | None = None,
        resources: dict[str, int | bool] | None = None,
        prompt_overflow: str = "shorten_reply",
    ) -> None:
        self.prompt_overflow = check_overflow(prompt_overflow)
        # resources: what one job with this engine takes from a cluster ({gpus, cpus,
        # share_gpus}); read by the launchers and the placement check (memarena.launch), not here
        self.resources = dict(resources or {})
        if int(tensor_parallel_size) < 1:
            raise ConfigError(
                f"memarena: backbone.tensor_parallel_size={tensor_parallel_size} must be >= 1."
            )
        if not 0.0 < float(gpu_memory_utilization) <= 1.0:
            raise ConfigError(
                f"memarena: backbone.gpu_memory_utilization={gpu_memory_utilization} must be in "
                "(0, 1]; two vLLM engines in one process must split it (e.g. 0.45 each)."
            )
        if max_new_tokens is not None and int(max_new_tokens) < 1:
            raise ConfigError(f"memarena: backbone.max_new_tokens={max_new_tokens} must be >= 1.")
        self.model_ref = str(model)
        if str(model).startswith("embedded:") or str(model).endswith(".gguf") or gguf_file:
            # vLLM reads safetensors folders: the hf engine's one-off conversion of the GGUF
            from memarena.llm.hf_loading import local_weights

            if converted_dir is None:
                raise ConfigError(
                    f"memarena: backbone.model={model} is a GGUF model; set "
                    "backbone.converted_dir to a folder for its safetensors copy."
                )
            self.model_ref = local_weights(str(model), gguf_file, converted_dir)
        self.max_new_tokens = int(max_new_tokens) if max_new_tokens is not None else None
        kwargs = plain(chat_template_kwargs or {})
        if enable_thinking is not None:  # Qwen3: the template's switch; None leaves it alone
            kwargs["enable_thinking"] = bool(enable_thinking)
        self.chat_template_kwargs: dict[str, Any] = kwargs
        # for requests with tools only (memarena.llm.tool_templates); their cache keys name it
        self.tools_template = load_tools_template(tools_template)
        self.tools_identity = self.tools_template.identity if self.tools_template else ""
        cache_model = f"vllm:{model}"
        if chat_template or kwargs not in _DEFAULT_TEMPLATE_KWARGS:
            extra = json.dumps([chat_template, kwargs], sort_keys=True)
            cache_model += ":" + hashlib.sha256(extra.encode()).hexdigest()[:12]
        cache_model += overflow_identity(self.prompt_overflow)
        super().__init__(
            name=name or Path(self.model_ref).name,
            cache_model=cache_model,
            cache_path=cache_path,
        )

        vllm = import_vllm()
        self.vllm = vllm
        self.structured_field, self.structured_cls = structured_api(vllm)
        engine_args: dict[str, Any] = {
            "model": self.model_ref,
            "tensor_parallel_size": int(tensor_parallel_size),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "dtype": str(dtype),
            "seed": int(seed),
            "trust_remote_code": bool(trust_remote_code),
            "enforce_eager": bool(enforce_eager),
        }
        if max_model_len is not None:
            engine_args["max_model_len"] = int(max_model_len)
        if download_dir is not None:
            engine_args["download_dir"] = str(Path(str(download_dir)).expanduser())
        engine_args.update(plain(engine_kwargs or {}))
        self.engine_args = engine_args
        self.engine_key: tuple[str, str] | None = None
        try:
            self._attach_engine(engine_args, model, chat_template, max_model_len)
        except BaseException:
            self.close()
            raise

    def _attach_engine(
        self,
        engine_args: dict[str, Any],
        model: str,
        chat_template: str | None,
        max_model_len: int | None,
    ) -> None:
        try:
            self.llm = load_engine(self.vllm, engine_args)
        except (OSError, ValueError) as err:  # missing weights, bad dtype, model too long, ...
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(
                f"memarena: vLLM cannot start backbone.model={model}: {reason}. Give a local "
                "folder with config.json and weights or a hub id this machine can download "
                "(backbone.download_dir sets where), and check tensor_parallel_size, "
                "max_model_len and gpu_memory_utilization against the GPUs here."
            ) from err
        self.engine_key = engine_key(engine_args)  # from here on, close() gives it back
        self.tokenizer = self.llm.get_tokenizer()
        self.chat_template = chat_template or getattr(self.tokenizer, "chat_template", None)
        if not self.chat_template:
            raise ConfigError(
                f"memarena: backbone.model={model} has no chat template (a base model?). Use an "
                "instruction-tuned model or set backbone.chat_template to a Jinja template."
            )
        self.native_tools = self.tools_template is not None or renders_tools(self.chat_template)
        self.context_limit = int(max_model_len) if max_model_len else _engine_max_len(self.llm)

    def close(self) -> None:
        """Give the shared engine back (shut down when no other backbone uses it), then close
        the call cache. Closing twice is harmless; a closed backbone cannot generate."""
        key, self.engine_key = self.engine_key, None
        self.llm = None
        if key is not None:
            runtime.release(key)
        super().close()

    # -- prompts ----------------------------------------------------------------------------
    def no_native_tools(self) -> str:
        return no_native_tools(self.name)

    def render_prompt(self, request: ChatRequest) -> str:
        """The prompt text: the chat template applied to ``request.messages`` (and
        ``request.tools``, through the tools template when one is set), as the hf engine does."""
        args = template_args(
            request, self.chat_template, self.tools_template, self.native_tools, self.name
        )
        return self.tokenizer.apply_chat_template(
            request.messages,
            tokenize=False,
            add_generation_prompt=True,
            **args,
            **self.chat_template_kwargs,
        )

    def encode_prompt(self, request: ChatRequest) -> list[int]:
        # the template already holds the special tokens (BOS where the model has one)
        return list(self.tokenizer.encode(self.render_prompt(request), add_special_tokens=False))

    def fit(self, request: ChatRequest) -> Fit:
        """The request's prompt ids and reply cap fitted into the context
        (``prompt_overflow``; a choice's cap is never lowered)."""
        return fit_prompt(
            self.encode_prompt(request),
            self._max_tokens(request),
            self.context_limit,
            self.prompt_overflow,
            shortenable=request.choices is None,
        )

    # -- sampling parameters ----------------------------------------------------------------
    def _max_tokens(self, request: ChatRequest) -> int:
        if request.choices is not None:  # a choice is never cut short
            longest = max(
                len(self.tokenizer.encode(c, add_special_tokens=False)) for c in request.choices
            )
            return longest + 2  # the end token, plus one for tokenizations that differ
        wanted = max(1, int(request.max_tokens))
        return min(wanted, self.max_new_tokens) if self.max_new_tokens else wanted

    def sampling_params(self, request: ChatRequest, max_tokens: int) -> Any:
        sampled = request.temperature > 0
        kwargs: dict[str, Any] = {
            "n": 1,
            "temperature": float(request.temperature) if sampled else 0.0,
            "top_p": float(request.top_p) if sampled else 1.0,
            "max_tokens": int(max_tokens),
        }
        if sampled:
            kwargs["seed"] = int(request.seed)
        if request.choices is not None:
            kwargs[self.structured_field] = self.structured_cls(choice=list(request.choices))
        elif request.json_schema is not None:
            kwargs[self.structured_field] = self.structured_cls(json=plain(request.json_schema))
        elif request.stop:
            kwargs["stop"] = list(request.stop)
        return self.vllm.SamplingParams(**kwargs)

    # -- generation -------------------------------------------------------------------------
    def _generate(self, requests: list[ChatRequest]) -> list[Completion]:
        if self.llm is None:
            raise RuntimeError(f"{self.name}: generate on a closed VLLMBackbone")
        fits = [self.fit(request) for request in requests]
        sent = [(r, f) for r, f in zip(requests, fits, strict=True) if not f.refused]
        prompts = [{"prompt_token_ids": f.ids} for _, f in sent]
        params = [self.sampling_params(r, f.max_tokens) for r, f in sent]
        outputs = iter(self.llm.generate(prompts, params, use_tqdm=False) if sent else [])
        return [
            refusal(f, self.context_limit or 0, self.name)
            if f.refused
            else self._finish(request, next(outputs), f)
            for request, f in zip(requests, fits, strict=True)
        ]

    def _finish(self, request: ChatRequest, output: Any, fit: Fit) -> Completion:
        sample = output.outputs[0]
        prompt_ids = getattr(output, "prompt_token_ids", None)
        prompt_tokens = len(prompt_ids) if prompt_ids is not None else len(fit.ids or ())
        completion = Completion(
            text=sample.text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(sample.token_ids),
            prompt_fit=fit.event,
        )
        if request.choices is None:
            return completion  # JSON is checked against its schema by BackboneBase
        index = choice_index(sample.text, request.choices)
        if index is None:
            completion.fallback = "choice_invalid"
        else:
            completion.text = request.choices[index]
            completion.choice_index = index
        return completion


def choice_index(text: str, choices: list[str]) -> int | None:
    """Index of the choice ``text`` is (exactly, else once stripped); None when none."""
    if text in choices:
        return choices.index(text)
    stripped = text.strip()
    for i, choice in enumerate(choices):
        if choice.strip() == stripped:
            return i
    return None


def _engine_max_len(llm: Any) -> int | None:
    for owner in (llm, getattr(llm, "llm_engine", None)):
        config = getattr(owner, "model_config", None)
        value = getattr(config, "max_model_len", None)
        if isinstance(value, int) and value > 0:
            return value
    return None
