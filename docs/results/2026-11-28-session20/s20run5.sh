# Session 20 run 5 (experiment build, not kept): what attend_short's 7 us a layer is made of.
# WGFUSE_ATT_EXP=1: K and V read from q (cached, same loads and arithmetic); 2: the kernel only
# copies q to its output; WGFUSE_DROP=short: no attention dispatch. Timing only.
set -x
BUNDLE=bundle5.tgz source .baseline/s20/common.sh
R=$OUT/r5; mkdir -p $R
dec() {  # label prompt-length env
  for rep in 1 2; do
    env $3 timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids $2) -n 128 --warmup 64 --temp 0 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us')"
  done
}
{
for n in 16 300; do
  dec normal-$n $n X=1; dec cached-$n $n WGFUSE_ATT_EXP=1; dec copy-$n $n WGFUSE_ATT_EXP=2; dec drop-$n $n WGFUSE_DROP=short
done
for v in X=1 WGFUSE_ATT_EXP=1 WGFUSE_ATT_EXP=2; do
  env $v timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 128 --temp 0 --profile=5 > /dev/null 2> $R/profile-$v.txt
  echo "$v"; grep -E "attention|one pass" $R/profile-$v.txt
done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
