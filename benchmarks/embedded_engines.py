"""The embedded SmolLM2-135M on CPU: the hf engine against llama-cpp-python on the same prompts.

    python benchmarks/embedded_engines.py --prompts 4 --rounds 3 --threads 1

The question it answers (issue 18): is llama.cpp, with its own prompt cache, faster than the hf
engine for the agent's workload, so that it should be the embedded default? Prompts are real
agent prompts (the conversation format's first prompt of PDDL test tasks, ~1,000-1,700
tokens). Per prompt, interleaved between the engines (hf, llama, then llama, hf) and reported
as medians over all rounds:

- ``fresh``: a prompt never seen, one token out (prefill speed);
- ``decode``: 20 greedy tokens on a prompt whose prefix is cached (decode speed);
- ``step``: the prompt extended by one step (an assistant action and an ~80-token observation),
  one token out: what the agent pays per step when the prefix is reused.

llama.cpp reads the packaged Q4_1 GGUF; hf the dequantized float32 copy. Both get the same
token ids. Threads: ``--threads`` for both (1 by default: the hf engine's default on 2 cores).
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import llama_cpp

    hf = HFBackbone(
        device="cpu", dtype="float32", cache_path=None, num_threads=args.threads,
        converted_dir=CONF.parent / ".cache" / "models",
    )  # fmt: skip
    folder, gguf = resolve_embedded_llm("embedded:smollm2-135m")
    llama = llama_cpp.Llama(
        model_path=str(folder / gguf), n_ctx=4096, n_threads=args.threads,
        n_threads_batch=args.threads, n_batch=512, verbose=False,
    )  # fmt: skip
    prompts = agent_prompts(args.prompts)
    times: dict[str, list[float]] = {}

    def add(key: str, seconds: float) -> None:
        times.setdefault(key, []).append(seconds)

    def run_hf(messages: list[dict]) -> None:
        hf.prefixes.clear()
        first = ChatRequest(messages, max_tokens=1)
        step = ChatRequest(extended(messages), max_tokens=1)
        add("hf fresh", timed(lambda: hf.generate([first])))
        add("hf decode", timed(lambda: hf.generate([ChatRequest(messages, max_tokens=20)])))
        add("hf step", timed(lambda: hf.generate([step])))

    def run_llama(messages: list[dict]) -> None:
        ids = hf.encode_prompt(ChatRequest(messages))
        more = hf.encode_prompt(ChatRequest(extended(messages)))
        llama.reset()  # its prompt cache: the tokens it evaluated last are reused
        def complete(tokens: list[int], n: int) -> None:
            llama.create_completion(tokens, max_tokens=n, temperature=0)

        add("llama fresh", timed(lambda: complete(ids, 1)))
        add("llama decode", timed(lambda: complete(ids, 20)))
        add("llama step", timed(lambda: complete(more, 1)))

    for r in range(args.rounds):
        for messages in prompts:
            order = (run_hf, run_llama) if r % 2 == 0 else (run_llama, run_hf)
            for run in order:
                run(messages)
    tokens = [len(hf.encode_prompt(ChatRequest(m))) for m in prompts]
    table = {key: round(statistics.median(values), 3) for key, values in times.items()}
    print(json.dumps({"llama_cpp": llama_cpp.__version__, "threads": args.threads,
                      "prompt_tokens": tokens, "median_s": table}, indent=2))  # fmt: skip
    hf.close()


if __name__ == "__main__":
    main()
