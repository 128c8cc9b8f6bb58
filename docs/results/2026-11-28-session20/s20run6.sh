# Session 20 run 6: decode attention at short contexts, existing paths only (main's code, run 5's
# Session 20 run 6 (the first try dumped logits, which reads back every step: host-bound, discarded): decode attention at short contexts, existing paths only (main's code, run 5's
# the cache in chunks of 16/32/64 with its combine folded into o_proj (--fusion full
# --attn-fuse-max 0: also 2 dispatches) and with its own combine (--attn-short-max 0: 3).
set -x
BUNDLE=bundle5.tgz source .baseline/s20/common.sh
R=$OUT/r6; mkdir -p $R
dec() {  # label prompt-length extra
  for rep in 1 2; do
    timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids $2) -n 128 --warmup 64 --temp 0 $3 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', d['dispatches_per_step'], d['generated_ids'][-4:])"
  done
}
{
for n in 16 300; do
  dec short-$n $n ""
  for c in 16 32 64; do dec ocomb$c-$n $n "--fusion full --attn-fuse-max 0 --attn-chunk $c"; done
  dec split32-$n $n "--attn-short-max 0 --attn-chunk 32"
done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
rm -f $R/*.npy; cd $OUT && tar czf r6.tgz r6 && rm -rf r6
