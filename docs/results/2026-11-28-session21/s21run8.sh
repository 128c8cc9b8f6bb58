# Session 21 run 8: 91d6858 (the loops take r0 from their unit; no change of arithmetic) against
# 5b5c20b, 0.5B persistent: logits of both compared, 2 timings each.
set -x
export BUNDLE=bundle8.tgz
source .baseline/s21/common.sh
R=$OUT/r8; mkdir -p $R
PP="--decode persistent --decode-check 32"
{
for b in dist-main dist; do
  timeout 120 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 24 --temp 0 $PP --dump-logits $R/$b.npy --json $R/lg-$b.json > /dev/null 2>$R/lg-$b.log || echo "$b failed"
done
python3 -c "
import numpy as np, json; a=np.load('$R/dist.npy'); b=np.load('$R/dist-main.npy')
print('91d6858 vs 5b5c20b logits bitwise:', bool((a==b).all()), 'tokens equal:', json.load(open('$R/lg-dist.json'))['generated_ids']==json.load(open('$R/lg-dist-main.json'))['generated_ids'])"
for rep in 1 2; do for b in dist-main dist; do
  timeout 120 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 128 --warmup 64 --temp 0 $PP --json $R/$b-$rep.json > /dev/null 2>&1
  python3 -c "import json; d=json.load(open('$R/$b-$rep.json')); print('$b', $rep, round(d['decode_tok_s'],1), d['decode']['variant'], d['decode']['checked_tokens'])"
done; done
} 2>&1 | grep -v "^+" | tee $R/out.txt
rm -f $R/*.npy; cd $OUT && tar czf r8.tgz r8 && rm -rf r8
