# Session 15 run 5 (H100): the normed products' last round in 64 x 64 tiles (this tree) against cc1c33d
# (the tiled attention, dist-main): prefill_bench.sh, 0.5B 5 runs, 1.5B 3 runs, f16; the logits and 8 greedy
# tokens of both builds at 512 and 4,000 tokens compared; decode unchanged.
BUNDLE=bundle5.tgz source .baseline/s15/common.sh
R=$OUT/r5; mkdir -p $R
source .baseline/s15/fns.sh
cmp_builds() {  # model label length: this tree against dist-main
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $1 --prompt-ids $(ids $3) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/$2-$3-$b.npy --json /tmp/$2-$3-$b.json >/dev/null 2>&1 || echo "$2 $3 $b failed"
  done
  python3 - $2 $3 <<'P'
import json, sys, numpy as np
m, n = sys.argv[1:3]; ref = np.load(f'/tmp/{m}-{n}-dist-main.npy').astype(np.float64); x = np.load(f'/tmp/{m}-{n}-dist.npy').astype(np.float64)
print(m, n, 'tokens: tree vs cc1c33d: max |diff| / max |logit|', float(np.abs(x - ref).max() / np.abs(ref).max()),
      'tokens equal', json.load(open(f'/tmp/{m}-{n}-dist.json'))['generated_ids'] == json.load(open(f'/tmp/{m}-{n}-dist-main.json'))['generated_ids'])
P
}
for n in 512 4000; do cmp_builds $M5 0.5b $n; done | tee $R/logits.txt
V="base:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf MODEL=$M5 REPS=5 VARIANTS="$V" timeout 250 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
M15=$(build 1.5b)
for n in 512 4000; do cmp_builds $M15 1.5b $n; done | tee -a $R/logits.txt
OUT=$R/pf15 MODEL=$M15 REPS=3 VARIANTS="$V" timeout 200 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
for f in $R/pf/profile/*.log $R/pf15/profile/*.log; do echo "== $f"; grep -E "^(qkv|gate|one)" $f | awk '{ if ($1 == "one") print "pass", $4; else print $1, $3 }' | tr '\n' ' '; echo; done | tee $R/profiles.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
