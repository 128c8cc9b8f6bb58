#!/usr/bin/env bash
# Two wgfuse builds on the same GPU and the same model folders, run by run in turn: decode speed
# and load time of build A (e.g. the previous main) against build B (this checkout), each with its
# storage dtypes. A regression shows as B's median below A's while both ran interleaved, so clocks
# and the machine's other load affect both alike.
#
#   OUT=dir A=/path/old/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=/tmp/qwen/m1 1.5b=/tmp/qwen/m2" \
#     A_DTYPES=f16 B_DTYPES=f16,bf16 REPS=5 bench/baselines/ab_decode.sh
#
# Each run: a 16-token prompt, 64 tokens untimed (--warmup), then 128 greedy tokens timed, the model
# loaded afresh. Every run's --json goes to $OUT/ab/, the table (decode tok/s and load s, medians with
# min-max) to $OUT/ab.md. Builds that ran the same model and dtype must agree on the tokens: the
# table says so per row.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}" "${A:?set A to the baseline wgfuse}" "${B:?set B to the wgfuse under test}"
: "${MODELS:?set MODELS to label=folder pairs}"
A_DTYPES=${A_DTYPES:-f16}
B_DTYPES=${B_DTYPES:-f16}
REPS=${REPS:-5}
mkdir -p "$OUT/ab"
prompt=$(seq -s, 1000 1015)
rc=0
for rep in $(seq 1 "$REPS"); do
  for pair in $MODELS; do
    label=${pair%%=*} folder=${pair#*=}
    for side in A B; do
      bin=${!side} dtypes_var=${side}_DTYPES
      for dtype in ${!dtypes_var//,/ }; do
        name="$label~$side~$dtype~$rep"
        "$bin" generate -m "$folder" --prompt-ids "$prompt" -n 128 --temp 0 --dtype "$dtype" --warmup 64 \
          --json "$OUT/ab/$name.json" >/dev/null 2>"$OUT/ab/$name.log" ||
          { echo "ab: $name failed:"; tail -3 "$OUT/ab/$name.log"; rc=1; }
        echo "$name: $(tail -1 "$OUT/ab/$name.log")"
      done
    done
  done
done
python3 - "$OUT/ab" >"$OUT/ab.md" <<'EOF'
import json, statistics, sys
from collections import defaultdict
from pathlib import Path
runs = defaultdict(list)
for f in sorted(Path(sys.argv[1]).glob("*.json")):
    label, side, dtype, _ = f.stem.split("~")
    runs[(label, dtype, side)].append(json.loads(f.read_text()))
def span(xs, fmt):
    return f"{fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"
print("| model | storage | build | runs | decode tok/s median [min-max] | load s median [min-max] | tokens as A's |")
print("|---|---|---|---|---|---|---|")
for (label, dtype, side), js in sorted(runs.items()):
    a = runs.get((label, dtype, "A"))
    same = "-" if side == "A" or not a else ("yes" if all(j["generated_ids"] == a[0]["generated_ids"] for j in js) else "NO")
    print(f"| {label} | {dtype} | {side} | {len(js)} | {span([j['decode_tok_s'] for j in js], '{:.1f}')} | "
          f"{span([j['load_ms'] / 1e3 for j in js], '{:.2f}')} | {same} |")
EOF
cat "$OUT/ab.md"
exit $rc
