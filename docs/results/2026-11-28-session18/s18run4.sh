# Session 18 run 4: KSTEP an override (variant/wgfuse): 32 columns a step for every tile but
# 128 x 128 (WGFUSE_PREFILL_KSTEP=32), against this tree (dist) and the variant at 16: the
# driver's statistics, logits, prefill at 512 / 1,024 / 4,000 tokens (f16) and 512 (q8_0).
set -x
BUNDLE=bundle4.tgz source .baseline/s18/common.sh
rm -rf dist-variant && cp -a dist dist-variant && cp /tmp/bundle/variant/wgfuse dist-variant/wgfuse-linux-x64/
V=dist-variant/wgfuse-linux-x64/wgfuse
R=$OUT/r4; mkdir -p $R
for n in 512 4000; do
  timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-a.npy --json /tmp/l-$n-a.json > /dev/null 2>&1 || echo "$n tree failed"
  WGFUSE_PREFILL_KSTEP=32 timeout 60 $V generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-b.npy --json /tmp/l-$n-b.json > /dev/null 2>&1 || echo "$n k32 failed"
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-a.npy').astype(np.float64); b=np.load('/tmp/l-$n-b.npy').astype(np.float64)
print('$n tokens: k32 vs tree max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-a.json'))['generated_ids']==json.load(open('/tmp/l-$n-b.json'))['generated_ids'])"
done | tee $R/logits.txt
for n in 512 4000; do
  WGFUSE_PREFILL_KSTEP=32 timeout 120 $V generate -m $M5 --temp 0 --ctx 4096 --dump-shaders --verbose --prompt-ids $(ids $n) -n 2 2> /tmp/dump-k$n.txt > /dev/null
  SPIRV_AS=.baseline/s18/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump-k$n.txt --tool .baseline/s18/vk_pipeline_stats --out /tmp/st-k$n --grep matmul 2>&1 | tail -2
  mkdir -p $R/k32-$n && cp /tmp/st-k$n/stats.* $R/k32-$n/
done
VS="tree:$D/wgfuse:;k16:$V:;k32:$V::WGFUSE_PREFILL_KSTEP=32"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$VS" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
OUT=$R/q8 MODEL=$M5 REPS=3 DTYPE=q8_0 LENGTHS=512 VARIANTS="tree:$D/wgfuse:;k32:$V::WGFUSE_PREFILL_KSTEP=32" timeout 120 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/q8.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
