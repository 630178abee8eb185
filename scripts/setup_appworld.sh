#!/usr/bin/env bash
# AppWorld's own virtual environment for env=appworld (default .venv-appworld).
# The appworld package pins pydantic<2, which conflicts with the main venv, so memarena runs
# AppWorld's environment server from this venv and talks to it over HTTP on 127.0.0.1.
#   bash scripts/setup_appworld.sh        (or: make appworld)
# It installs a pinned appworld and runs `appworld install` (offline: it unpacks the package's
# bundled app code). The task data is a separate download; see the message at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
APPWORLD_VENV="${APPWORLD_VENV:-.venv-appworld}"
PYTHON="${PYTHON:-python3}"
APPWORLD_SPEC="${APPWORLD_SPEC:-appworld==0.1.3.post1}"
start=$(date +%s)

[ -x "$APPWORLD_VENV/bin/python" ] || "$PYTHON" -m venv "$APPWORLD_VENV"
echo "[setup_appworld] installing $APPWORLD_SPEC into $APPWORLD_VENV"
"$APPWORLD_VENV/bin/python" -m pip install -q --upgrade pip
"$APPWORLD_VENV/bin/python" -m pip install -q "$APPWORLD_SPEC"
"$APPWORLD_VENV/bin/appworld" install
"$APPWORLD_VENV/bin/python" - <<'PY'
import appworld.apps

_ = appworld.apps.api_docs  # what `appworld serve` checks: the unpacked app code is there
print(f"[setup_appworld] appworld {appworld.__version__} is fully installed")
PY
echo "[setup_appworld] ok in $(( $(date +%s) - start )) s"

root="${APPWORLD_ROOT:-}"
if [ -n "$root" ] && [ -d "$root/data/tasks" ] && [ -d "$root/data/datasets" ]; then
  echo "[setup_appworld] AppWorld data found at $root/data (env.root / APPWORLD_ROOT)"
else
  cat <<MSG
[setup_appworld] No AppWorld task data${root:+ at $root/data}. It is a download (internet needed):
    $APPWORLD_VENV/bin/appworld download data --root DIR
  which creates DIR/data/ (datasets/, tasks/, base_dbs/, api_docs/). Then run with
    python run.py env=appworld env.root=DIR      (or export APPWORLD_ROOT=DIR)
  Without it, env=appworld runs a six-task offline smoke root (results under appworld_smoke).
MSG
fi
