# Session 18 run 5: the residual products' 64 x 64 tiles with their columns written out (variant,
# UNROLL_K), and an experiment on the tiled prompt attention: without the next tile's K/V in
# registers (WGFUSE_EXP_KV_PARTS=2), against this tree (dist): statistics, logits, prefill.
set -x
BUNDLE=bundle5.tgz source .baseline/s18/common.sh
rm -rf dist-variant && cp -a dist dist-variant && cp /tmp/bundle/variant/wgfuse dist-variant/wgfuse-linux-x64/
V=dist-variant/wgfuse-linux-x64/wgfuse
R=$OUT/r5; mkdir -p $R
for n in 512 4000; do
  timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-a.npy --json /tmp/l-$n-a.json > /dev/null 2>&1 || echo "$n tree failed"
  timeout 60 $V generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-b.npy --json /tmp/l-$n-b.json > /dev/null 2>&1 || echo "$n v5 failed"
  WGFUSE_EXP_KV_PARTS=2 timeout 60 $V generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-c.npy --json /tmp/l-$n-c.json > /dev/null 2>&1 || echo "$n kv2 failed"
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-a.npy').astype(np.float64)
for x in 'bc':
  b=np.load(f'/tmp/l-$n-{x}.npy').astype(np.float64)
  print('$n tokens:', x, 'vs tree max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-a.json'))['generated_ids']==json.load(open(f'/tmp/l-$n-{x}.json'))['generated_ids'])"
done | tee $R/logits.txt
for x in u kv2; do
  env $([ $x = kv2 ] && echo WGFUSE_EXP_KV_PARTS=2) timeout 120 $V generate -m $M5 --temp 0 --ctx 4096 --dump-shaders --verbose --prompt-ids $(ids 4000) -n 2 2> /tmp/dump-$x.txt > /dev/null
  SPIRV_AS=.baseline/s18/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump-$x.txt --tool .baseline/s18/vk_pipeline_stats --out /tmp/st-$x --grep "matmul|attend_prompt" 2>&1 | tail -2
  mkdir -p $R/st-$x && cp /tmp/st-$x/stats.* $R/st-$x/
done
VS="tree:$D/wgfuse:;unroll64:$V:;unroll64-kv2:$V::WGFUSE_EXP_KV_PARTS=2"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$VS" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
OUT=$R/q8 MODEL=$M5 REPS=3 DTYPE=q8_0 LENGTHS=512 VARIANTS="tree:$D/wgfuse:;unroll64:$V:" timeout 120 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/q8.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
