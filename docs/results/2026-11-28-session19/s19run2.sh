# Session 19 run 2: the tree (Q/K/V split along K at short prompts, the prompt chunk submitted in
# pieces of 1, 1, 2, 4 layers) against main (be1d04d's binary) in the same call: logits, qwen_check,
# prefill 0.5B f16 (5 runs) / q8_0 (3) / 1.5B (2); decode with --fusion full and persistent.
set -x
BUNDLE=bundle2.tgz source .baseline/s19/common.sh
R=$OUT/r2; mkdir -p $R
for n in 512 1024 4000; do
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 8 --temp 0 --ctx 4096 --dump-logits /tmp/l-$n-$b.npy --json /tmp/l-$n-$b.json > /dev/null 2>&1 || echo "$n $b failed"
  done
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-dist-main.npy').astype(np.float64); b=np.load('/tmp/l-$n-dist.npy').astype(np.float64)
print('$n tokens: tree vs main max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-dist.json'))['generated_ids']==json.load(open('/tmp/l-$n-dist-main.json'))['generated_ids'])"
done 2>&1 | grep tokens | tee $R/logits.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -6) | tee $R/qwen_check.txt
VS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf MODEL=$M5 REPS=5 VARIANTS="$VS" timeout 240 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf.txt
OUT=$R/q8 MODEL=$M5 REPS=3 DTYPE=q8_0 LENGTHS=512,4000 PROFILE=0 VARIANTS="$VS" timeout 100 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q8.txt
for rep in 1 2 3; do for v in "steps:" "full:--fusion full" "persistent:--decode persistent --decode-check 8"; do
  l=${v%%:*}; e=${v#*:}
  timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --warmup 64 --temp 0 $e --json $R/dec-$l-$rep.json > /dev/null 2>$R/dec-$l-$rep.log || echo "$l failed"
  python3 -c "import json; d=json.load(open('$R/dec-$l-$rep.json')); print('$l', $rep, round(d['decode_tok_s'],1), d['dispatches_per_step'], d['generated_ids'][:6])"
done; done 2>&1 | grep -v "^+" | tee $R/decode.txt
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 PROFILE=0 VARIANTS="$VS" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
