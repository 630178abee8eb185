"""Serve one backbone preset for many jobs: the right server, on 127.0.0.1 unless told otherwise,
until it answers a chat completion; then print the overrides a sweep needs, and keep serving
until Ctrl-C / SIGTERM (the server is always stopped with this script).

    python scripts/serve.py backbone=qwen3_8b                    # vllm serve, its parallelism,
                                                                 # tool parser, prefix caching
    python scripts/serve.py backbone=qwen3_32b --host 0.0.0.0 --port 8001 --api-key-env VLLM_KEY
    python scripts/serve.py backbone=smollm2_135m --port 0       # llama.cpp server on this CPU
    python scripts/serve.py backbone=qwen3_14b --dry-run         # print the command only
    make serve ARGS="backbone=qwen3_8b"

Then, e.g. (the printed line): python run.py -m launcher=joblib backbone=openai_server
backbone.base_url=http://127.0.0.1:8000/v1 backbone.model=Qwen/Qwen3-8B ... seed=0,1,2
Overrides after the preset (``backbone.max_model_len=16384``) change what is served.
docs/clusters.md: one node, one served model, many jobs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("overrides", nargs="+", help="backbone=<preset> [backbone.<key>=<value> ...]")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; 0.0.0.0 for jobs on other nodes)")
    p.add_argument("--port", type=int, default=8000, help="port (0: a free one)")
    p.add_argument("--api-key-env", default=None,
                   help="name of the environment variable holding the key clients must send")
    p.add_argument("--threads", type=int, default=None, help="llama.cpp server: CPU threads")
    p.add_argument("--log", default=None, help="server log (its request log) file")
    p.add_argument("--ready-s", type=float, default=None,
                   help="seconds to wait for the first answer (vLLM 1800, llama.cpp 120)")
    p.add_argument("--dry-run", action="store_true", help="print the command and overrides only")
    return p.parse_args(argv)


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import memarena.config_resolvers  # noqa: F401

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=overrides)
    preset = next(o.split("=", 1)[1] for o in overrides if o.startswith("backbone="))
    return OmegaConf.to_container(cfg.backbone, resolve=True), preset


def main(argv: list[str]) -> int:
    from memarena.core import MemarenaError
    from memarena.core.processes import free_port, stop
    from memarena.launch.serve import client_overrides, plan_server, public_host
    from memarena.llm.local_server import LocalServer, ServerError

    args = _args(argv)
    if not any(o.startswith("backbone=") for o in args.overrides):
        print("serve: give the preset to serve, e.g. backbone=qwen3_8b", file=sys.stderr)
        return 2
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            print(f"serve: --api-key-env {args.api_key_env}: that variable is not set "
                  "(export it with the key first)", file=sys.stderr)  # fmt: skip
            return 2
    try:
        backbone, preset = _compose(args.overrides)
        port = args.port or free_port()
        plan = plan_server(backbone, preset, args.host, port, api_key, args.threads)
    except MemarenaError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except Exception as exc:  # a Hydra composition error: a bad preset or key
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    url = f"http://{public_host(args.host)}:{port}/v1"
    agent = " ".join(client_overrides(plan, url, args.api_key_env))
    memory = " ".join(client_overrides(plan, url, args.api_key_env, "memory_backbone"))
    print(f"serve: {preset} ({plan.served_name}) with {plan.kind}: {plan.shell()}", flush=True)
    if args.dry_run:
        print(f"agent:  {agent}\nmemory: {memory}")
        return 0
    import subprocess

    log = Path(args.log) if args.log else Path(f"serve-{preset}-{port}.log").resolve()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(plan.command, stdout=out, stderr=subprocess.STDOUT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # finally: the server is stopped
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    probe = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    server = LocalServer(f"http://{probe}:{port}/v1", proc, log, api_key)
    ready_s = args.ready_s or (1800.0 if plan.kind == "vllm" else 120.0)
    try:
        try:
            server.wait_ready(ready_s)
            server.check_completion(plan.served_name, timeout=ready_s)
        except ServerError as exc:
            print(f"serve: the server did not come up: {exc}", file=sys.stderr)
            return 1
        print(f"serve: ready at {url} (pid {proc.pid}; request log {log})", flush=True)
        print(f"agent:  {agent}", flush=True)
        print(f"memory: {memory}", flush=True)
        code = proc.wait()
        print(f"serve: the server exited ({code}); last lines of {log}:\n{server.log_tail()}",
              file=sys.stderr)  # fmt: skip
        return 1
    finally:
        stop(proc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
