"""The embedded SmolLM2-135M on CPU: the hf engine before issue 32 (float32), its int4 decode
with a float32 or a bfloat16 prefill, and llama-cpp-python on the same prompts, in one run.

    python benchmarks/embedded_engines.py --prompts 4 --rounds 3 --threads 1

Prompts are real agent prompts (the conversation format's first prompt of PDDL test tasks,
~1,400-1,700 tokens). Per prompt and engine, interleaved (the engines' order turns each round)
and reported as medians over all rounds:

- ``prefill tokens/s``: a prompt never seen, one token out;
- ``decode ms/token``: ``--decode-tokens`` greedy tokens (no stop) on the same prompt, whose
  prefix is now cached, minus one token out of that cached prompt (what is left is the decode
  steps alone), divided by the decode steps;
- ``step s``: the prompt extended by one step (an assistant action and an ~80-token
  observation), one token out: what the agent pays per step when the prefix is reused.

``hf float32`` is the transformers forward over the dequantized float32 copy (the engine
before issue 32); ``hf int4`` the same prefill with 4-bit decode steps
(``backbone.decode_weights=int4``, :mod:`memarena.llm.int4_decode`: the embedded preset on a
CPU without native bfloat16); ``hf bf16 int4`` a bfloat16 prefill and cache with the same
decode (the embedded preset's ``dtype: fast`` on a CPU with native bfloat16); ``llama.cpp``
reads the packaged Q4_1 GGUF with its own prompt cache. All get the
same token ids and ``--threads`` threads (1 by default: the hf engine's setting on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import memarena.config_resolvers  # noqa: F401  (resolvers used by conf/)
from memarena.agent.prompts import Conversation
from memarena.core import ChatRequest, MemoryContext
from memarena.llm.embedded import resolve_embedded_llm
from memarena.llm.hf import HFBackbone

CONF = Path(__file__).resolve().parents[1] / "conf"
STEP = "You pick up the red block. It is in your hand; the blue block is on the table. " * 4


def agent_prompts(count: int) -> list[list[dict]]:
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        cfg = compose("config", overrides=["env=pddl"])
    env = instantiate(cfg.env, _convert_="all")
    prompts = []
    for task in env.tasks("test")[:count]:
        episode = env.open(task)
        observation = episode.reset()
        conversation = Conversation.start(
            env.prompt(task), task, observation, MemoryContext.empty(), show_actions=False
        )
        prompts.append(conversation.messages())
        episode.close()
    env.close()
    return prompts


def extended(messages: list[dict]) -> list[dict]:
    return [*messages, {"role": "assistant", "content": "pick up red"},
            {"role": "user", "content": STEP}]  # fmt: skip


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


class HFRunner:
    def __init__(self, name: str, backbone: HFBackbone, decode: int) -> None:
        self.name, self.backbone, self.decode = name, backbone, decode

    def ids(self, messages: list[dict]) -> list[int]:
        return self.backbone.encode_prompt(ChatRequest(messages))

    def run(self, messages: list[dict], add) -> None:
        hf = self.backbone
        hf.prefixes.clear()
        one = ChatRequest(messages, max_tokens=1)
        # no eos: every request decodes exactly `decode` tokens (a JSON-free, stop-free reply)
        many = ChatRequest(messages, max_tokens=self.decode, stop=None)
        add(self.name, "fresh", timed(lambda: hf.generate([one])))
        hf.prefixes.clear()
        hf.generate([one])  # the prompt cached, as below
        cached_one = timed(lambda: hf.generate([one]))
        hf.prefixes.clear()
        hf.generate([one])
        eos, hf.eos_ids = hf.eos_ids, set()
        try:
            cached_many = timed(lambda: hf.generate([many]))
        finally:
            hf.eos_ids = eos
        add(self.name, "decode", (cached_many - cached_one) / (self.decode - 1))
        add(self.name, "step", timed(lambda: hf.generate([ChatRequest(extended(messages),
                                                                     max_tokens=1)])))  # fmt: skip


class LlamaRunner:
    name = "llama.cpp"

    def __init__(self, threads: int, decode: int, encode) -> None:
        import llama_cpp

        folder, gguf = resolve_embedded_llm("embedded:smollm2-135m")
        self.llama = llama_cpp.Llama(
            model_path=str(folder / gguf), n_ctx=4096, n_threads=threads,
            n_threads_batch=threads, n_batch=512, verbose=False,
        )  # fmt: skip
        self.decode, self.encode = decode, encode
        self.version = llama_cpp.__version__

    def run(self, messages: list[dict], add) -> None:
        ids, more = self.encode(messages), self.encode(extended(messages))
        llama = self.llama

        def complete(tokens: list[int], n: int) -> None:
            # ignore_eos: exactly n tokens, as the hf runs
            llama.create_completion(tokens, max_tokens=n, temperature=0,
                                    logit_bias={llama.token_eos(): -1e9})  # fmt: skip

        llama.reset()  # its prompt cache: the tokens it evaluated last are reused
        add(self.name, "fresh", timed(lambda: complete(ids, 1)))
        cached_one = timed(lambda: complete(ids, 1))
        cached_many = timed(lambda: complete(ids, self.decode))
        add(self.name, "decode", (cached_many - cached_one) / (self.decode - 1))
        add(self.name, "step", timed(lambda: complete(more, 1)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--decode-tokens", type=int, default=64)
    engines = ["float32", "int4", "bf16-int4", "llama.cpp"]
    parser.add_argument("--engines", nargs="+", default=engines, choices=engines)
    args = parser.parse_args()
    models = CONF.parent / ".cache" / "models"
    common = dict(device="cpu", dtype="float32", cache_path=None, num_threads=args.threads,
                  converted_dir=models)  # fmt: skip
    float32 = HFBackbone(**common, decode_weights="float")
    runners = []
    if "float32" in args.engines:
        runners.append(HFRunner("hf float32", float32, args.decode_tokens))
    if "int4" in args.engines:
        int4 = HFBackbone(**common, decode_weights="int4")
        runners.append(HFRunner("hf int4", int4, args.decode_tokens))
    if "bf16-int4" in args.engines:
        bf16 = HFBackbone(**{**common, "dtype": "bfloat16"}, decode_weights="int4")
        runners.append(HFRunner("hf bf16 int4", bf16, args.decode_tokens))
    version = None
    if "llama.cpp" in args.engines:
        llama = LlamaRunner(args.threads, args.decode_tokens,
                            lambda m: float32.encode_prompt(ChatRequest(m)))  # fmt: skip
        runners.append(llama)
        version = llama.version
    prompts = agent_prompts(args.prompts)
    tokens = [len(float32.encode_prompt(ChatRequest(m))) for m in prompts]
    times: dict[tuple[str, str], list[float]] = {}

    def add(engine: str, what: str, seconds: float) -> None:
        times.setdefault((engine, what), []).append(seconds)

    for r in range(args.rounds):
        for i, messages in enumerate(prompts):
            turn = (r * len(prompts) + i) % len(runners)
            for runner in runners[turn:] + runners[:turn]:
                runner.run(messages, add)
    med = {key: statistics.median(values) for key, values in times.items()}
    fresh_tokens = statistics.median(tokens)
    table = {
        runner.name: {
            "prefill tokens/s": round(fresh_tokens / med[(runner.name, "fresh")], 1),
            "decode ms/token": round(1000 * med[(runner.name, "decode")], 2),
            "step s": round(med[(runner.name, "step")], 3),
        }
        for runner in runners
    }
    report = {"llama_cpp": version, "threads": args.threads, "prompt_tokens": tokens,
              "decode_tokens": args.decode_tokens, "engines": table}  # fmt: skip
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
