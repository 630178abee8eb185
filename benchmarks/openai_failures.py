"""How long the openai engine takes to give up on requests that cannot be answered.

    python benchmarks/openai_failures.py                    # an unreachable server (loopback)
    python benchmarks/openai_failures.py --serve-embedded   # + a request the server rejects

Unreachable: ``--requests`` requests to a loopback port where nothing listens (connection
refused at once), for several ``max_retries`` with ``backoff_s`` 0.1 and ``timeout`` 2: the wall
time of the ``generate`` call is the retry schedule (the sum of the backoffs) plus the refused
connections. Rejected (with ``--serve-embedded``, llama-cpp-python's server on the embedded
SmolLM2-135M): one request in OpenAI's ``response_format: json_schema`` form, which that server
answers with a 500 validation error, retried like any 5xx. Each row is one ``generate`` call;
``attempts`` counts the bodies the client sent.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time

from memarena.core.llm_types import ChatRequest
from memarena.llm.local_server import SERVED_NAME, embedded_server, free_port
from memarena.llm.openai_engine import OpenAIBackbone, record_attempts


def measure(case: str, backbone: OpenAIBackbone, requests: list[ChatRequest]) -> dict:
    sent = record_attempts(backbone)
    try:
        start = time.perf_counter()
        out = backbone.generate(requests)
        wall = time.perf_counter() - start
    finally:
        backbone.close()
    row = {
        "case": case,
        "requests": len(requests),
        "max_retries": backbone.max_retries,
        "backoff_s": backbone.backoff_s,
        "attempts": len(sent),
        "failed": sum(c.fallback == "request_failed" for c in out),
        "wall_s": round(wall, 3),
        "error": (out[0].error or "")[:60],
    }
    print(json.dumps(row), flush=True)
    return row


def unreachable(args) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    for retries in args.max_retries:
        backbone = OpenAIBackbone(
            model="m",
            base_url=url,
            api_key_env=None,
            timeout=2,
            max_retries=retries,
            backoff_s=0.1,
            cache_path=None,
        )
        asks = [ChatRequest([{"role": "user", "content": f"hi {i}"}]) for i in range(args.requests)]
        measure("unreachable", backbone, asks)


def rejected(args) -> None:
    with embedded_server(args.threads) as server:
        for retries in args.max_retries:
            backbone = OpenAIBackbone(
                model=SERVED_NAME,
                base_url=server.url,
                api_key_env=None,
                structured="openai",  # json_schema response_format: not this server's form
                timeout=120,
                max_retries=retries,
                backoff_s=0.1,
                cache_path=None,
            )
            ask = ChatRequest([{"role": "user", "content": "Pick one."}], choices=["a", "b"])
            measure("rejected_json_schema", backbone, [ask])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-retries", type=int, nargs="+", default=[0, 1, 4])
    parser.add_argument(
        "--serve-embedded",
        action="store_true",
        help="also start llama-cpp-python's server on the embedded SmolLM2-135M",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    logging.getLogger("memarena").setLevel(logging.ERROR)  # the per-kind failure warnings
    unreachable(args)
    if args.serve_embedded:
        rejected(args)


if __name__ == "__main__":
    main()
