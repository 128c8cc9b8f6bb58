# Session 21 run 6: the kept change against main in one call. dist: staged vectors by column-group
# halves (persistent decoder and the step kernels' matvec), the persistent default loading 16-bit
# weights ahead; dist-main: main (6eb6963). Decode 0.5B / 1.5B, step and persistent decoders, 3 runs
# alternating; logits of both builds compared (--dump-logits, 24 tokens; not timed).
set -x
export BUNDLE=bundle6.tgz
source .baseline/s21/common.sh
R=$OUT/r6; mkdir -p $R
dec() {  # label, binary dir, model, prompt length, n, rep, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n $5 --warmup 64 --temp 0 --ctx 4096 $7 --json $R/$1-$6.json > /dev/null 2>$R/$1-$6.log || echo "$1 failed: $(tail -2 $R/$1-$6.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$6.json')); x=d.get('decode',{}); print('$1', $6, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'))"
}
logits() {  # label, binary dir, model, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids 16) -n 24 --temp 0 --ctx 4096 $4 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed"
}
cmp() { python3 -c "
import numpy as np, json; a=np.load('$R/$1.npy'); b=np.load('$R/$2.npy')
ta=json.load(open('$R/$1.json'))['generated_ids']; tb=json.load(open('$R/$2.json'))['generated_ids']
print('$1 vs $2: max|a-b|/max|b| =', float(np.abs(a-b).max()/np.abs(b).max()), 'tokens equal:', ta==tb, 'bitwise:', bool((a==b).all()))"; }
PP="--decode persistent --decode-check 32"
for M in 0.5b 1.5b; do
  MD=$(build $M); W=""; [ $M = 1.5b ] && W="--persistent-wg 132"
  {
  for rep in 1 2 3; do
    dec main-steps-$M dist-main $MD 16 128 $rep ""
    dec steps-$M dist $MD 16 128 $rep ""
    dec main-pers-$M dist-main $MD 16 128 $rep "$PP $W"
    dec pers-$M dist $MD 16 128 $rep "$PP $W"
  done
  for rep in 1 2; do
    dec main-steps-long-$M dist-main $MD 4000 64 $rep ""
    dec steps-long-$M dist $MD 4000 64 $rep ""
  done
  logits lg-main-steps-$M dist-main $MD ""; logits lg-steps-$M dist $MD ""
  logits lg-main-pers-$M dist-main $MD "$PP $W"; logits lg-pers-$M dist $MD "$PP $W"
  cmp lg-steps-$M lg-main-steps-$M; cmp lg-pers-$M lg-main-pers-$M; cmp lg-pers-$M lg-steps-$M
  } 2>&1 | grep -v "^+" | tee -a $R/decode.txt
done
rm -f $R/*.npy
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
