"""Start AppWorld's environment server bound to 127.0.0.1 (run with the AppWorld venv's python).

``appworld serve environment`` (appworld 0.1.3.post1) always binds 0.0.0.0 and has no host
option; this launcher makes the same checks as that command (a ``data/`` folder under the root,
the package fully installed) and serves the same FastAPI app, ``appworld.serve.environment.app``,
on the loopback interface only. It imports nothing from memarena: it runs in AppWorld's own
virtual environment (``scripts/setup_appworld.sh``).

    .venv-appworld/bin/python serve_loopback.py --port 8123 --root /path/to/appworld_root
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--root", required=True, help="AppWorld root (the folder holding data/)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "data")):
        print(f"appworld-serve: no data/ folder in the AppWorld root {root}", file=sys.stderr)
        return 2
    from appworld import update_root

    update_root(root)
    try:
        import appworld.apps

        _ = appworld.apps.api_docs
    except (AttributeError, ModuleNotFoundError):
        print("appworld-serve: the appworld package is not fully installed; run "
              "'appworld install'", file=sys.stderr)  # fmt: skip
        return 2
    import uvicorn
    from appworld.serve.environment import app

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
