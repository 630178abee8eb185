"""Tokens/s through memarena's openai engine at several concurrency levels.

    python benchmarks/openai_throughput.py --base-url http://127.0.0.1:8000/v1 --model NAME
    python benchmarks/openai_throughput.py --serve-embedded      # starts llama-cpp-python's
                                                                 # server on the embedded SmolLM2

Each level sends the same ``--requests`` distinct prompts in one ``generate`` call (no call
cache) and reports completion tokens/s and requests/s over the wall time of that call.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from memarena.core.llm_types import ChatRequest
from memarena.llm.local_server import SERVED_NAME, embedded_server
from memarena.llm.openai_engine import OpenAIBackbone

TOPICS = ["a lighthouse", "a robot", "the sea", "a library", "a fox", "rain", "a train", "snow"]


def measure(url: str, model: str, args) -> list[dict]:
    rows = []
    for level in args.concurrency:
        backbone = OpenAIBackbone(
            model=model,
            base_url=url,
            api_key_env=args.api_key_env,
            structured="none",
            concurrency=level,
            timeout=600,
            max_retries=0,
        )
        requests = [
            ChatRequest(
                [{"role": "user", "content": f"Write a short story about {TOPICS[i % 8]} ({i})."}],
                max_tokens=args.max_tokens,
                seed=i,
            )
            for i in range(args.requests)
        ]
        try:
            backbone.generate(requests[:1])  # warm-up: connection, prompt cache
            backbone.usage.completion_tokens = backbone.usage.prompt_tokens = 0
            start = time.perf_counter()
            out = backbone.generate(requests[1:] if args.requests > 1 else requests)
            wall = time.perf_counter() - start
        finally:
            backbone.close()
        failed = sum(c.fallback == "request_failed" for c in out)
        completion = sum(c.completion_tokens for c in out)
        rows.append(
            {
                "concurrency": level,
                "requests": len(out),
                "failed": failed,
                "wall_s": round(wall, 2),
                "completion_tokens": completion,
                "prompt_tokens": sum(c.prompt_tokens for c in out),
                "completion_tokens_per_s": round(completion / wall, 1),
                "requests_per_s": round(len(out) / wall, 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL")
    parser.add_argument("--model", help="the served model name")
    parser.add_argument("--api-key-env", default=None, help="variable holding the key, if any")
    parser.add_argument(
        "--serve-embedded",
        action="store_true",
        help="start llama-cpp-python's server on the embedded SmolLM2-135M",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--requests", type=int, default=17, help="per level, incl. 1 warm-up")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    if args.serve_embedded:
        with embedded_server(args.threads) as server:
            measure(server.url, SERVED_NAME, args)
    elif args.base_url and args.model:
        measure(args.base_url, args.model, args)
    else:
        parser.error("give --base-url and --model, or --serve-embedded")


if __name__ == "__main__":
    main()
