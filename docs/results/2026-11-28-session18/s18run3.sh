# Session 18 run 3: multiply_step's 16 columns written out (variant/wgfuse) against this tree
# (dist): the driver's statistics, logits, prefill at 512 / 1,024 / 4,000 tokens with per-kernel
# profiles, each with Dawn's robustness on and off.
set -x
BUNDLE=bundle3.tgz source .baseline/s18/common.sh
rm -rf dist-variant && cp -a dist dist-variant && cp /tmp/bundle/variant/wgfuse dist-variant/wgfuse-linux-x64/
R=$OUT/r3; mkdir -p $R
for n in 512 4000; do
  for b in dist dist-variant; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-$b.npy --json /tmp/l-$n-$b.json > /dev/null 2>&1 || echo "$n $b failed"
  done
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-dist.npy').astype(np.float64); b=np.load('/tmp/l-$n-dist-variant.npy').astype(np.float64)
print('$n tokens: unroll vs tree max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-dist.json'))['generated_ids']==json.load(open('/tmp/l-$n-dist-variant.json'))['generated_ids'])"
done | tee $R/logits.txt
for n in 512 4000; do
  timeout 120 dist-variant/wgfuse-linux-x64/wgfuse generate -m $M5 --temp 0 --ctx 4096 --dump-shaders --verbose --prompt-ids $(ids $n) -n 2 2> /tmp/dump-u$n.txt > /dev/null
  SPIRV_AS=.baseline/s18/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump-u$n.txt --tool .baseline/s18/vk_pipeline_stats --out /tmp/st-u$n --grep matmul 2>&1 | tail -2
  mkdir -p $R/unroll-$n && cp /tmp/st-u$n/stats.* $R/unroll-$n/
  cut -c1-60,200-400 $R/unroll-$n/stats.md
done
V="tree:$D/wgfuse:;unroll:dist-variant/wgfuse-linux-x64/wgfuse:;tree-nr:$D/wgfuse:--unsafe-no-robustness;unroll-nr:dist-variant/wgfuse-linux-x64/wgfuse:--unsafe-no-robustness"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$V" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
