# Session 15 runs 4a/4b: prompt ids and the logits check (sourced).
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
cmp_logits() {  # model label length: the default (tiled) against blocks, 8 greedy tokens
  for a in auto blocks; do
    timeout 60 $D/wgfuse generate -m $1 --prompt-ids $(ids $3) -n 8 --temp 0 --ctx 4096 --prefill-attention $a --dump-logits /tmp/$2-$3-$a.npy --json /tmp/$2-$3-$a.json >/dev/null 2>&1 || echo "$2 $3 $a failed"
  done
  python3 - $2 $3 <<'P'
import json, sys, numpy as np
m, n = sys.argv[1:3]; ref = np.load(f'/tmp/{m}-{n}-blocks.npy').astype(np.float64); x = np.load(f'/tmp/{m}-{n}-auto.npy').astype(np.float64)
print(m, n, 'tokens: default (tiled) vs blocks: max |diff| / max |logit|', float(np.abs(x - ref).max() / np.abs(ref).max()),
      'tokens equal', json.load(open(f'/tmp/{m}-{n}-auto.json'))['generated_ids'] == json.load(open(f'/tmp/{m}-{n}-blocks.json'))['generated_ids'])
P
}
