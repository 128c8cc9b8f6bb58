#!/usr/bin/env bash
# `wgfuse serve --parallel 8` before and after (issue 26): packaged builds given by folder, served in
# turns (A B A B ... for ROUNDS rounds) on one model folder (served as f16), each after a warm-up
# round of 8: this tree's bench/serve_load.py at CONCURRENCY x MAX_TOKENS (the same client for every
# server, so the figures compare), then a prompt of JOIN_WORDS words joining a stream of
# RUNNING_TOKENS (1,024) tokens (its time to first token, the running stream's longest gap;
# JOIN_WORDS=0 skips it), /health's counters after; then each build's `wgfuse generate`
# alone and with --parallel 8 (the batch's ceiling: it times steps only) on PROMPT_IDS (16 ids).
# Prints a summary per build and round.
#
#   OUT=/some/dir FOLDER=/tmp/qwen/qwen2.5-0.5b-random-... \
#     BUILDS="main=dist-main/wgfuse-linux-x64 branch=dist/wgfuse-linux-x64" bench/baselines/serve_ab.sh
#
# A build is NAME=DIR (DIR/wgfuse and DIR/wgfuse-serve) or NAME=WGFUSE,WGFUSE_SERVE (two paths, e.g.
# main's binaries renamed beside this tree's in one dist folder, where they find the same Dawn).
#
# Writes $OUT/NAME-rR.json and NAME-rR.join.json (serve_load.py's, with /health), NAME-rR.server.log,
# NAME.generate.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
: "${FOLDER:?set FOLDER to a model folder}"
: "${BUILDS:?set BUILDS to NAME=DIR or NAME=WGFUSE,WGFUSE_SERVE entries}"
ROUNDS=${ROUNDS:-2}
CONCURRENCY=${CONCURRENCY:-1,8,32}
MAX_TOKENS=${MAX_TOKENS:-256}
PORT=${PORT:-8080}
JOIN_WORDS=${JOIN_WORDS:-2000}
RUNNING_TOKENS=${RUNNING_TOKENS:-1024}  # the stream the long prompt joins
PROMPT_IDS=${PROMPT_IDS:-$(seq -s, 1000 1015)}
mkdir -p "$OUT"
rc=0

binaries() {  # NAME=DIR or NAME=WGFUSE,WGFUSE_SERVE -> name, cli, serve
  name=${1%%=*}
  local spec=${1#*=}
  if [[ $spec == *,* ]]; then cli=${spec%%,*} serve=${spec#*,}; else cli=$spec/wgfuse serve=$spec/wgfuse-serve; fi
}

wait_for() {  # the server at $PORT lists its model (at most 5 minutes)
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && return 0
    sleep 1
  done
  return 1
}

for r in $(seq 1 "$ROUNDS"); do
  for build in $BUILDS; do
    binaries "$build"
    "$serve" --model "$FOLDER" --dtype f16 --parallel 8 --api-rate off --max-queue 256 \
      --port "$PORT" --db "$OUT/$name-r$r.sqlite" >"$OUT/$name-r$r.server.log" 2>&1 &
    pid=$!
    if wait_for; then
      url=http://127.0.0.1:$PORT/v1
      python3 bench/serve_load.py --url "$url" --concurrency 8 --max-tokens 32 >/dev/null 2>&1
      echo "== $name round $r"
      python3 bench/serve_load.py --url "$url" --concurrency "$CONCURRENCY" --max-tokens "$MAX_TOKENS" \
        --json "$OUT/$name-r$r.json" || rc=1
      if [[ $JOIN_WORDS != 0 ]]; then
        python3 bench/serve_load.py --url "$url" --concurrency 1 --max-tokens "$RUNNING_TOKENS" --join-long "$JOIN_WORDS" \
          --json "$OUT/$name-r$r.join.json" || rc=1
      fi
    else
      echo "serve_ab: $name did not start:"; tail -5 "$OUT/$name-r$r.server.log"; rc=1
    fi
    kill "$pid"; wait "$pid" 2>/dev/null
  done
done

for build in $BUILDS; do
  binaries "$build"
  for parallel in 1 8; do
    extra=()
    [[ $parallel == 8 ]] && extra=(--parallel 8)
    "$cli" generate -m "$FOLDER" --dtype f16 --prompt-ids "$PROMPT_IDS" -n "$MAX_TOKENS" --temp 0 --warmup 16 \
      "${extra[@]}" 2>&1 >/dev/null | grep -E "decode [0-9]|^parallel" || rc=1
  done >"$OUT/$name.generate.txt"
done

echo "== summary"
python3 - "$OUT" "$ROUNDS" $BUILDS <<'PY'
import json, re, sys
from pathlib import Path
out, rounds, builds = Path(sys.argv[1]), int(sys.argv[2]), [b.split("=")[0] for b in sys.argv[3:]]
for name in builds:
    gen = (out / f"{name}.generate.txt").read_text() if (out / f"{name}.generate.txt").exists() else ""
    single = re.search(r"decode ([0-9.]+) tok/s", gen)
    batch = re.search(r"([0-9.]+) tok/s per sequence, ([0-9.]+) tok/s in all", gen)
    print(f"{name}: generate single {single.group(1) if single else '?'} tok/s, --parallel 8 "
          f"{batch.group(1) if batch else '?'} tok/s per sequence, {batch.group(2) if batch else '?'} in all")
    for r in range(1, rounds + 1):
        f = out / f"{name}-r{r}.json"
        if not f.exists():
            print(f"  round {r}: no result")
            continue
        j = json.load(open(f))
        for row in j["rows"]:
            print(f"  round {r} C={row['concurrency']:>2}: {row['answered']}/{row['concurrency']} answered, served "
                  f"{row['aggregate_tok_s']:7.1f}, decode {row['decode_tok_s']:7.1f} tok/s "
                  f"({row['decode_together']:.0%} together), per stream p50 {row['stream_tok_s_p50']:6.1f}, "
                  f"TTFT p50 {row['ttft_ms_p50']:5.0f} / p99 {row['ttft_ms_p99']:5.0f} ms")
        h = j.get("health") or {}  # after the warm-up and the CONCURRENCY rows, before the join
        print(f"  round {r} health: joins {json.dumps(h.get('joins'))}; rounds {json.dumps(h.get('rounds'))}")
        jf = out / f"{name}-r{r}.join.json"
        if jf.exists():
            jl = json.load(open(jf))["join_long"]
            print(f"  round {r} join of {jl['joiner_prompt_tokens']} tokens: its TTFT {jl['joiner_ttft_ms']:.0f} ms, the "
                  f"running stream's longest gap {jl['running_gap_ms_before']:.1f} ms before, "
                  f"{jl['running_gap_ms_during_prefill']:.1f} ms meanwhile")
PY
exit $rc
