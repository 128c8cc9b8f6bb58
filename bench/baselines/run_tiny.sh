#!/usr/bin/env bash
# The tiny byte-vocabulary Qwen2 (issue 10) in PyTorch on an NVIDIA GPU, against `wgfuse tiny`:
#
#   OUT=/some/dir bench/baselines/run_tiny.sh          (from the repository root)
#
# 1. The model folder MODEL_DIR: written by `wgfuse tiny ... --write-model` when WGFUSE has the
#    tiny command, else by qwen2_torch.py write-tiny (then nothing checks the tokens: "unchecked").
# 2. For each N in SEQUENCES: `wgfuse tiny --model MODEL_DIR ... --sequences N --json` (if it exists),
#    then qwen2_torch.py bench on the same folder and prompt (sequence i: the prompt's bytes + i mod 256),
#    MODES of eager, graph, compile_graph, compile_ro, each checked against wgfuse's tokens, then timed.
# JSON per run in $OUT/tiny/, the table in $OUT/tiny.md.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT to the output directory}"
D=${D:-64}
LAYERS=${LAYERS:-4}
HEADS=${HEADS:-2}
KV_HEADS=${KV_HEADS:-2}
SEED=${SEED:-1}
PROMPT=${PROMPT:-Hello}
TOKENS=${TOKENS:-64}
SEQUENCES=${SEQUENCES:-1 64 1024}
MODES=${MODES:-eager,graph,compile_graph}
REPS=${REPS:-5}
WGFUSE=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
LABEL=tiny-d$D-l$LAYERS-h$HEADS-kv$KV_HEADS
MODEL_DIR=${MODEL_DIR:-/tmp/tiny/$LABEL-seed$SEED}
mkdir -p "$OUT/tiny" "$MODEL_DIR"
export PYTHONUNBUFFERED=1
rc=0

shape=(--d "$D" --layers "$LAYERS" --heads "$HEADS" --kv-heads "$KV_HEADS" --seed "$SEED")
have_tiny=0
"$WGFUSE" tiny --help >/dev/null 2>&1 && have_tiny=1
if [[ $have_tiny == 1 ]]; then
  "$WGFUSE" tiny "${shape[@]}" --tokens "$TOKENS" --prompt "$PROMPT" --write-model "$MODEL_DIR" >"$OUT/tiny/write.log" 2>&1 ||
    { echo "run_tiny: wgfuse tiny --write-model failed:"; tail -3 "$OUT/tiny/write.log"; exit 1; }
else
  echo "run_tiny: $WGFUSE has no tiny command; writing the model with qwen2_torch.py (tokens unchecked)"
  python3 bench/baselines/qwen2_torch.py write-tiny "${shape[@]}" --out "$MODEL_DIR" || exit 1
fi

for n in $SEQUENCES; do
  check=()
  if [[ $have_tiny == 1 ]]; then
    wg="$OUT/tiny/wgfuse-s$n.json"
    if "$WGFUSE" tiny --model "$MODEL_DIR" --prompt "$PROMPT" --tokens "$TOKENS" --sequences "$n" --mode all \
      --json "$wg" >"$OUT/tiny/wgfuse-s$n.log" 2>&1; then
      check=(--wgfuse-json "$wg")
    else
      echo "run_tiny: wgfuse tiny --sequences $n failed:"; tail -3 "$OUT/tiny/wgfuse-s$n.log"; rc=1
    fi
  fi
  python3 bench/baselines/qwen2_torch.py bench --model "$MODEL_DIR" --dtype f32 --label "$LABEL" --modes "$MODES" \
    --prompt "$PROMPT" --tokens "$TOKENS" --sequences "$n" --reps "$REPS" "${check[@]}" --out "$OUT/tiny" 2>&1 |
    tee -a "$OUT/tiny.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
done
python3 bench/baselines/qwen2_torch.py table "$OUT/tiny" >"$OUT/tiny.md"
cat "$OUT/tiny.md"
exit $rc
