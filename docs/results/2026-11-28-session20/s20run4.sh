# Session 20 run 4: attend_short, its shuffle loops nested so the constant one unrolls (tree), against main (the
# experiment build of run 1, its switches off) in the same call: logits and tokens, qwen_check,
# decode 0.5B / 1.5B f16, the driver's statistics of attend_short.
set -x
BUNDLE=bundle4.tgz source .baseline/s20/common.sh
R=$OUT/r4; mkdir -p $R
M15=$(build 1.5b)
for m in M5 M15; do for n in 16 100 300; do
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m ${!m} --prompt-ids $(ids $n) -n 64 --temp 0 --dump-logits /tmp/l-$m-$n-$b.npy --json /tmp/l-$m-$n-$b.json > /dev/null 2>&1 || echo "$m $n $b failed"
  done
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$m-$n-dist-main.npy').astype(np.float64); b=np.load('/tmp/l-$m-$n-dist.npy').astype(np.float64)
print('$m prompt $n + 64: tree vs main max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$m-$n-dist.json'))['generated_ids']==json.load(open('/tmp/l-$m-$n-dist-main.json'))['generated_ids'])"
done; done 2>&1 | grep tokens | tee $R/logits.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b,1.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -8) | tee $R/qwen_check.txt
dec() {  # label binary model prompt-length reps env
  for rep in $(seq $5); do
    env $6 timeout 60 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 128 --warmup 64 --temp 0 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us')"
  done
}
{
for rep in 1 2 3; do dec main-05b-16 dist-main $M5 16 1 X=1; dec tree-05b-16 dist $M5 16 1 X=1; done
for rep in 1 2; do dec main-05b-300 dist-main $M5 300 1 X=1; dec tree-05b-300 dist $M5 300 1 X=1; done
for rep in 1 2; do dec main-15b-16 dist-main $M15 16 1 X=1; dec tree-15b-16 dist $M15 16 1 X=1; done
dec main-05b-16-noattn dist-main $M5 16 1 WGFUSE_DROP=short
for b in dist-main dist; do
  timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 128 --temp 0 --profile=5 > /dev/null 2> $R/profile-$b.txt
  echo "$b"; grep -E "attention|qkv|o_proj|gate_up|down|one pass|all" $R/profile-$b.txt | head -8
done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 4 --temp 0 --dump-shaders --verbose 2> /tmp/dump.txt > /dev/null
SPIRV_AS=.baseline/s20/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump.txt --tool .baseline/s20/vk_pipeline_stats --out /tmp/st --grep "attend|matvec" 2>&1 | tail -2
cp /tmp/st/stats.* $R/ ; grep -i "attend_short" /tmp/st/stats.md
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
