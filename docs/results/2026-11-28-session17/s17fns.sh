# Session 17: prompt ids, logits against a reference binary, the gate/up kernel times of a profile (sourced).
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
cmp_bins() {  # model label length: this tree's logits and 8 greedy tokens against dist-main's
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $1 --prompt-ids $(ids $3) -n 8 --temp 0 --ctx 4096 --dtype ${DT:-f16} --dump-logits /tmp/$2-$3-$b.npy --json /tmp/$2-$3-$b.json >/dev/null 2>&1 || echo "$2 $3 $b failed"
  done
  python3 - $2 $3 <<'P'
import json, sys, numpy as np
m, n = sys.argv[1:3]; ref = np.load(f'/tmp/{m}-{n}-dist-main.npy').astype(np.float64); x = np.load(f'/tmp/{m}-{n}-dist.npy').astype(np.float64)
print(m, n, 'tokens: tree vs main: max |diff| / max |logit|', float(np.abs(x - ref).max() / np.abs(ref).max()),
      'tokens equal', json.load(open(f'/tmp/{m}-{n}-dist.json'))['generated_ids'] == json.load(open(f'/tmp/{m}-{n}-dist-main.json'))['generated_ids'])
P
}
gate_up_us() {  # model length extra...: gate/up (and its sum) µs a call from --profile-prefill
  local m=$1 n=$2; shift 2
  echo "== $n tokens $*"
  timeout 60 $D/wgfuse generate -m $m --prompt-ids $(ids $n) -n 1 --temp 0 --ctx 4096 --dtype ${DT:-f16} --warmup 1 "$@" --profile-prefill=5 2>&1 >/dev/null | grep -E "gate_up|down|qkv|o_proj|attention|chunk" | head -9
}
