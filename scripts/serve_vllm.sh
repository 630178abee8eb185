#!/usr/bin/env bash
# Serve a model with `vllm serve` (OpenAI-compatible API) for memarena workers.
#   bash scripts/serve_vllm.sh MODEL [TP_SIZE] [PORT] [extra vllm serve flags...]
#   bash scripts/serve_vllm.sh Qwen/Qwen3-8B            # one GPU, port 8000
#   bash scripts/serve_vllm.sh Qwen/Qwen3-32B 2 8001    # two GPUs (80 GB each)
# Then: python run.py backbone=openai_server backbone.base_url=<printed url> backbone.model=<name>
# Environment (all optional):
#   MAX_MODEL_LEN            --max-model-len (default: the model's own, 32768 for Qwen3)
#   GPU_MEMORY_UTILIZATION   --gpu-memory-utilization (vLLM's default 0.9)
#   SERVED_MODEL_NAME        the name clients send as `model` (default: MODEL for a hub id,
#                            so the openai_server preset's Qwen/Qwen3-8B matches; the folder
#                            name for a local path)
#   HOST                     bind address (default 127.0.0.1, as scripts/serve.py: this machine
#                            only). Another address (0.0.0.0: workers on other nodes) needs a key
#   API_KEY_ENV              the NAME of a variable holding the key clients must send (vllm
#                            serve's --api-key, passed as VLLM_API_KEY); clients: backbone.api_key_env=<that name>. Required
#                            with a HOST other than loopback, unless NO_KEY=1 (a private network)
#   DOWNLOAD_DIR             where hub weights are downloaded (default: HF_HOME)
#   THINKING                 Qwen3 only: server-wide default of the chat template's
#                            enable_thinking (default false). Requests may still override it with
#                            chat_template_kwargs={"enable_thinking": ...}; memarena's openai
#                            engine sends backbone.chat_template_kwargs with every request, so
#                            thinking stays off even on a server started without this default.
#                            THINKING=keep passes nothing (vLLM older than
#                            --default-chat-template-kwargs).
#   TOOL_PARSER              --tool-call-parser with --enable-auto-tool-choice, so requests with
#                            `tools` (memarena's native tool calls, backbone.native_tools) are
#                            served and the model's <tool_call> blocks come back as tool_calls
#                            (default: hermes for Qwen models, none otherwise; none: off)
# Needs vLLM in the active environment: pip install vllm==0.33.0 (a GPU machine).
set -euo pipefail
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
MODEL="$1"
TP_SIZE="${2:-1}"
PORT="${3:-8000}"
shift $(( $# < 3 ? $# : 3 ))
command -v vllm >/dev/null || { echo "serve_vllm: no vllm on PATH (pip install vllm==0.33.0)" >&2; exit 1; }

if [ -e "$MODEL" ]; then DEFAULT_NAME="$(basename "${MODEL%/}")"; else DEFAULT_NAME="$MODEL"; fi
NAME="${SERVED_MODEL_NAME:-$DEFAULT_NAME}"
HOST="${HOST:-127.0.0.1}"
KEY=""
if [ -n "${API_KEY_ENV:-}" ]; then
  KEY="${!API_KEY_ENV:-}"
  [ -n "$KEY" ] || { echo "serve_vllm: API_KEY_ENV=$API_KEY_ENV, but \$$API_KEY_ENV is not set" >&2; exit 2; }
fi
case "$HOST" in
  127.*|localhost|::1) ;;
  *) if [ -z "$KEY" ] && [ "${NO_KEY:-0}" != "1" ]; then
       echo "serve_vllm: HOST=$HOST serves the model to the network with no key. Export a key" \
            "(export MEMARENA_SERVE_KEY=...) and set API_KEY_ENV=MEMARENA_SERVE_KEY (clients:" \
            "backbone.api_key_env=MEMARENA_SERVE_KEY), or NO_KEY=1 on a private network." >&2
       exit 2
     fi ;;
esac
args=(serve "$MODEL"
  --served-model-name "$NAME"
  --tensor-parallel-size "$TP_SIZE"
  --host "$HOST" --port "$PORT"
  # sampling defaults come from each request only (not the model's generation_config.json,
  # whose top_k/top_p would otherwise apply): the server samples as the offline engine does
  --generation-config vllm)
[ -n "${MAX_MODEL_LEN:-}" ] && args+=(--max-model-len "$MAX_MODEL_LEN")
[ -n "${GPU_MEMORY_UTILIZATION:-}" ] && args+=(--gpu-memory-utilization "$GPU_MEMORY_UTILIZATION")
[ -n "${DOWNLOAD_DIR:-}" ] && args+=(--download-dir "$DOWNLOAD_DIR")
[ -n "$KEY" ] && export VLLM_API_KEY="$KEY"  # vllm serve's --api-key, not shown in ps
THINKING="${THINKING:-false}"
if [[ "${MODEL,,}" == *qwen3* ]] && [ "$THINKING" != "keep" ]; then
  args+=(--default-chat-template-kwargs "{\"enable_thinking\": $THINKING}")
fi
TOOL_PARSER="${TOOL_PARSER:-$([[ "${MODEL,,}" == *qwen* ]] && echo hermes || echo none)}"
if [ "$TOOL_PARSER" != "none" ]; then
  args+=(--enable-auto-tool-choice --tool-call-parser "$TOOL_PARSER")
fi

ADDR="$HOST"
[ "$ADDR" = "0.0.0.0" ] && ADDR="$(hostname -f 2>/dev/null || hostname)"
echo "serve_vllm: $MODEL as '$NAME' (tensor parallel $TP_SIZE) on port $PORT"
echo "serve_vllm: base_url http://$ADDR:$PORT/v1   (ready when /v1/models answers)"
KEY_ARG=""
[ -n "$KEY" ] && KEY_ARG=" backbone.api_key_env=$API_KEY_ENV"
echo "serve_vllm: python run.py backbone=openai_server backbone.base_url=http://$ADDR:$PORT/v1 backbone.model=$NAME$KEY_ARG"
exec vllm "${args[@]}" "$@"
