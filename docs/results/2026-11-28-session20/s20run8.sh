# Session 20 run 8: attend_short capped at 32768 / head_dim positions (tree: 256 for 1.5B's head_dim
# 128, 512 as before for 0.5B) against main (run 5's build, switches off) in the same call: logits
# and tokens, then decode of 32 tokens after prompts of 260..470 (3 runs each, alternating).
set -x
BUNDLE=bundle6.tgz source .baseline/s20/common.sh
R=$OUT/r8; mkdir -p $R
M15=$(build 1.5b)
for n in 300 450; do
  for b in dist dist-main; do
    timeout 60 $b/wgfuse-linux-x64/wgfuse generate -m $M15 --prompt-ids $(ids $n) -n 16 --temp 0 --dump-logits /tmp/l-$n-$b.npy --json /tmp/l-$n-$b.json > /dev/null 2>&1 || echo "$n $b failed"
  done
  python3 -c "
import json, numpy as np
a=np.load('/tmp/l-$n-dist-main.npy').astype(np.float64); b=np.load('/tmp/l-$n-dist.npy').astype(np.float64)
print('1.5B prompt $n + 16: tree vs main max|diff|/max|logit|', float(np.abs(a-b).max()/np.abs(a).max()), 'tokens equal', json.load(open('/tmp/l-$n-dist.json'))['generated_ids']==json.load(open('/tmp/l-$n-dist-main.json'))['generated_ids'])"
done 2>&1 | grep tokens | tee $R/logits.txt
dec() {  # label binary model prompt-length
  timeout 60 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 32 --warmup 32 --temp 0 --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed"
  python3 -c "import json; d=json.load(open('$R/$1.json')); print('$1', round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', d['dispatches_per_step'])"
}
{
for n in 200 260 340 420 470; do for rep in 1 2 3; do
  dec main-15b-$n-$rep dist-main $M15 $n; dec tree-15b-$n-$rep dist $M15 $n
done; done
for rep in 1 2; do dec main-05b-340-$rep dist-main $M5 340; dec tree-05b-340-$rep dist $M5 340; done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
