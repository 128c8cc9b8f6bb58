# Session 20 run 7: where decode attention in one dispatch per head (attend_short) stops paying
# against the split along the cache (chunks of 64 / 32 + combine): 32 tokens after prompts of
# 128..448 (0.5B) and 128..384 (1.5B), f16, main's code (run 5's build, switches off).
set -x
BUNDLE=bundle5.tgz source .baseline/s20/common.sh
R=$OUT/r7; mkdir -p $R
M15=$(build 1.5b)
dec() {  # label model prompt-length extra
  for rep in 1 2; do
    timeout 60 $D/wgfuse generate -m $2 --prompt-ids $(ids $3) -n 32 --warmup 32 --temp 0 $4 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', d['dispatches_per_step'], d['generated_ids'][-3:])"
  done
}
{
for n in 128 192 256 320 384 448; do
  dec short-05b-$n $M5 $n ""; dec split64-05b-$n $M5 $n "--attn-short-max 0"; dec split32-05b-$n $M5 $n "--attn-short-max 0 --attn-chunk 32"
done
for n in 128 256 384; do
  dec short-15b-$n $M15 $n ""; dec split64-15b-$n $M15 $n "--attn-short-max 0"; dec split32-15b-$n $M15 $n "--attn-short-max 0 --attn-chunk 32"
done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
