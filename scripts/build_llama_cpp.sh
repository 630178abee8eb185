#!/usr/bin/env bash
# A portable build of llama-cpp-python[server] (the real OpenAI-compatible server that the openai
# engine's tests and benchmarks/openai_throughput.py start). Test-only: `make test` runs it
# through scripts/setup.sh --test; `make run` never needs it.
#
# llama.cpp's default is -march=native: a wheel built on one machine uses every instruction that
# machine advertises (AVX-512, AMX) and dies with SIGILL where those are missing or not enabled
# (AMX advertised by a VM's cpuid but not granted by its kernel). We build one fixed, portable
# instruction set instead (GGML_NATIVE=OFF):
#   x86_64 with AVX2/FMA/F16C/BMI2: x86-64-v3 (every x86 server since 2013), no AVX-512, no AMX;
#   older x86_64: SSE4.2 only;  other architectures: the compiler's generic target.
# llama.cpp's runtime CPU-variant dispatch (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS) is not used:
# llama-cpp-python 0.3.36 installs only the `ggml-cpu` library, not the `ggml-cpu-<variant>` ones
# that dispatch loads, and the dispatcher scores variants from cpuid alone, so it would pick the
# AMX variant on exactly the VMs that crash.
#
# The wheel is kept in ${XDG_CACHE_HOME:-~/.cache}/memarena/wheels/<version>-<level>/, keyed by
# the instruction level, and reused by later set-ups on any machine of that level (pip's own
# wheel cache is keyed by the source only and would hand back a native build).
#   VENV=.venv bash scripts/build_llama_cpp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
VERSION=0.3.36

flags="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)"
has() { [[ " $flags " == *" $1 "* ]]; }
ARCH="$(uname -m)"
ISA=()
if [ "$ARCH" = x86_64 ]; then
  if has avx2 && has fma && has f16c && has bmi2; then
    LEVEL=x86-64-v3
    ISA=(-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  else
    LEVEL=x86-64-sse42
    ISA=(-DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DGGML_BMI2=OFF)
  fi
  ISA+=(-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
        -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
else
  LEVEL="$ARCH-generic"
fi
CMAKE_ARGS="-DGGML_NATIVE=OFF ${ISA[*]} -DGGML_BACKEND_DL=OFF -DGGML_OPENMP=ON \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF"
PYTAG="$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/memarena/wheels/llama-cpp-python-$VERSION-$LEVEL-$PYTAG"

if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "[build_llama_cpp] compiling llama-cpp-python $VERSION for $LEVEL (4-10 min on 2 cores)"
  start=$(date +%s)
  mkdir -p "$WHEELS.tmp"
  CMAKE_ARGS="$CMAKE_ARGS" "$PY" -m pip wheel -q --no-deps --no-cache-dir \
    --no-binary llama-cpp-python -w "$WHEELS.tmp" "llama-cpp-python==$VERSION"
  rm -rf "$WHEELS" && mv "$WHEELS.tmp" "$WHEELS"
  echo "[build_llama_cpp] compiled in $(( $(date +%s) - start )) s"
else
  echo "[build_llama_cpp] reusing $WHEELS"
fi
# The portable wheel replaces any other build in the venv; then the [server] extra's packages.
"$PY" -m pip install -q --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl
"$PY" -m pip install -q --find-links "$WHEELS" --only-binary llama-cpp-python \
  "llama-cpp-python[server]==$VERSION"
"$PY" - "$LEVEL" <<'PYEOF'
import sys

import llama_cpp

info = llama_cpp.llama_print_system_info().decode()
print(f"[build_llama_cpp] llama-cpp-python {llama_cpp.__version__}, {sys.argv[1]}: {info.strip()}")
PYEOF
