# Session 21 run 7: attention_split's K-dot quarters summed from consecutive words (dist) against
# 0d186b6 (dist-main), 0.5B persistent after 16 and 4,000 prompt tokens; logits of both compared.
set -x
export BUNDLE=bundle7.tgz
source .baseline/s21/common.sh
R=$OUT/r7; mkdir -p $R
dec() {  # label, binary dir, prompt length, n, rep, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $3) -n $4 --warmup 64 --temp 0 --ctx 4096 $6 --json $R/$1-$5.json > /dev/null 2>$R/$1-$5.log || echo "$1 failed: $(tail -2 $R/$1-$5.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$5.json')); x=d.get('decode',{}); print('$1', $5, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'))"
}
logits() {  # label, binary dir, prompt length
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $3) -n 24 --temp 0 --ctx 4096 $PP --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed"
}
same() { python3 -c "
import numpy as np, json; a=np.load('$R/$1.npy'); b=np.load('$R/$2.npy')
ta=json.load(open('$R/$1.json'))['generated_ids']; tb=json.load(open('$R/$2.json'))['generated_ids']
print('$1 vs $2: max|a-b|/max|b| =', float(np.abs(a-b).max()/np.abs(b).max()), 'tokens equal:', ta==tb, 'bitwise:', bool((a==b).all()))"; }
PP="--decode persistent --decode-check 32"
{
for rep in 1 2 3; do
  dec main-pers dist-main 16 128 $rep "$PP"; dec pers dist 16 128 $rep "$PP"
done
for rep in 1 2; do
  dec main-pers-long dist-main 4000 64 $rep "$PP"; dec pers-long dist 4000 64 $rep "$PP"; dec steps-long dist 4000 64 $rep ""
done
logits lg-main dist-main 16; logits lg dist 16; same lg lg-main
logits lg-main-long dist-main 4000; logits lg-long dist 4000; same lg-long lg-main-long
} 2>&1 | grep -v "^+" | tee $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
