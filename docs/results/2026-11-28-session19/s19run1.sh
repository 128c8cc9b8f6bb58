# Session 19 run 1 (experiment build): prompt attention in blocks of 64 / 32 / 16 keys (WGFUSE_EXP_PK),
# Q/K/V split along K (WGFUSE_EXP_QKV), host time of the prefill (TMP lines), against main (be1d04d's binary).
set -x
BUNDLE=bundle1.tgz source .baseline/s19/common.sh
R=$OUT/r1; mkdir -p $R
for n in 512 1024; do
  for v in "main:dist-main" "tree:dist" "q7:dist:WGFUSE_EXP_QKV=64x64x7" "s4:dist:WGFUSE_EXP_QKV=32x64x4"; do
    IFS=: read -r l b e <<<"$v"
    env $e timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-$l.npy --json /tmp/l-$n-$l.json > /dev/null 2>/tmp/l-$n-$l.err || { echo "$n $l failed"; tail -3 /tmp/l-$n-$l.err; }
  done
  for l in tree q7 s4; do python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-main.npy').astype(np.float64); b=np.load('/tmp/l-$n-$l.npy').astype(np.float64)
print('$n tokens: $l vs main max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-$l.json'))['generated_ids']==json.load(open('/tmp/l-$n-main.json'))['generated_ids'])"; done
done 2>&1 | tee $R/logits.txt
VS="main:dist-main/wgfuse-linux-x64/wgfuse:;pk64:$D/wgfuse:;pk32:$D/wgfuse::WGFUSE_EXP_PK=32;pk16:$D/wgfuse::WGFUSE_EXP_PK=16;q7:$D/wgfuse::WGFUSE_EXP_QKV=64x64x7;q4:$D/wgfuse::WGFUSE_EXP_QKV=64x64x4;s4:$D/wgfuse::WGFUSE_EXP_QKV=32x64x4"
OUT=$R/pf MODEL=$M5 REPS=3 LENGTHS=512 VARIANTS="$VS" timeout 200 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
VS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:;blk64:$D/wgfuse:--prefill-attention blocks;q3:$D/wgfuse::WGFUSE_EXP_QKV=64x64x3;q3blk:$D/wgfuse:--prefill-attention blocks:WGFUSE_EXP_QKV=64x64x3"
OUT=$R/pf1k MODEL=$M5 REPS=3 LENGTHS=1024 VARIANTS="$VS" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf1k.txt
grep -h TMP $R/pf/runs/*.log | head -3; for f in $R/pf/runs/main-512-3.log $R/pf/runs/pk64-512-3.log $R/pf1k/runs/main-1024-3.log; do echo $f; grep TMP $f; done | tee $R/host.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
