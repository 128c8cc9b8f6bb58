# Session 18 run 6: the committed tree (be1d04d: UNROLL_K for the residual 64 x 64 tiles) against
# main 493268d (dist-main, the same code as 5f55ca8's binary) and llama.cpp 0.7.0's Vulkan backend
# in the same call: prefill 0.5B f16 at 512 / 1,024 / 4,000 tokens (5 runs), q8_0 at 512, 1.5B f16;
# logits against main, qwen_check against transformers.
set -x
BUNDLE=bundle6.tgz source .baseline/s18/common.sh
rm -rf dist-main && cp -a dist dist-main && cp /tmp/bundle/variant/wgfuse dist-main/wgfuse-linux-x64/
R=$OUT/r6; mkdir -p $R
for n in 512 4000; do
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-$b.npy --json /tmp/l-$n-$b.json > /dev/null 2>&1 || echo "$n $b failed"
  done
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-dist-main.npy').astype(np.float64); b=np.load('/tmp/l-$n-dist.npy').astype(np.float64)
print('$n tokens: tree vs main max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-dist.json'))['generated_ids']==json.load(open('/tmp/l-$n-dist-main.json'))['generated_ids'])"
done | tee $R/logits.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -6) | tee $R/qwen_check.txt
VS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf MODEL=$M5 REPS=5 VARIANTS="$VS" timeout 240 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
OUT=$R/q8 MODEL=$M5 REPS=3 DTYPE=q8_0 LENGTHS=512,4000 PROFILE=0 VARIANTS="$VS" timeout 100 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q8.txt
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
timeout 100 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 512,1024,4000 -n 0 -fa 1 -r 5 -o md 2>$R/lb05.log | tee $R/llamabench_05b.md
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 PROFILE=0 VARIANTS="$VS" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
