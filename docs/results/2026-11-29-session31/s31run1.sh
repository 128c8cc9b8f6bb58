# Session 31 run 1: the tiled prefill attention with a tile's keys shared out among SPLITS workgroups
# (t: this tree) against main (m: aa0975e). 0.5B (random weights, seed 20261122), prefill rate of
# one chunk, --warmup 1, 3 runs each; --prefill-attention-splits forces the split (0 = the rule).
# Predicted (0.5B): at 512 tokens attention 93 -> ~35 us a layer (the last query tile's 16 key tiles
# in a row bound it now; the kernel's full-load rate 16.7 TFLOP/s gives ~28 us + the combine), chunk
# -1.4 ms: 27.4k -> ~29.8k tok/s; at 1,024 165 -> ~120 us (+3.5%); 2,048 +1-2%; 4,000 level.
START=$(date +%s); BUNDLE=bundle-1.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R/prof; O=$OUT/run1.txt
prof() {  # label, binary dir, model, prompt length, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 1 --warmup 1 --temp 0 --ctx 4096 --profile-prefill=5 $5 --json $R/prof/$1.json > $R/prof/$1.txt 2>$R/prof/$1.log || echo "$1 failed: $(tail -2 $R/prof/$1.log)"
}
lgn() {  # label, binary dir, model, prompt length, extra: logits of 8 tokens after the prompt
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 8 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 300 512 1024 4000; do
  lgn m-$n dist-m $M5 $n ""; lgn t-$n dist-t $M5 $n "--prefill-attention tiled"; cmp t-$n m-$n
done
lgn m15-512 dist-m $M15 512 ""; lgn t15-512 dist-t $M15 512 "--prefill-attention tiled"; cmp t15-512 m15-512
for rep in 1 2 3; do
  for n in 512 1024; do
    pre m-$n dist-m $M5 $n $rep ""
    for s in 0 1 2 4 8; do pre t$s-$n dist-t $M5 $n $rep "--prefill-attention tiled --prefill-attention-splits $s"; done
  done
  pre m-2048 dist-m $M5 2048 $rep ""
  for s in 0 1 2 4; do pre t$s-2048 dist-t $M5 2048 $rep "--prefill-attention tiled --prefill-attention-splits $s"; done
  pre m-4000 dist-m $M5 4000 $rep ""
  for s in 0 2; do pre t$s-4000 dist-t $M5 4000 $rep "--prefill-attention tiled --prefill-attention-splits $s"; done
  for n in 100 200 300; do
    pre m-$n dist-m $M5 $n $rep ""
    pre t0-$n dist-t $M5 $n $rep "--prefill-attention tiled"
  done
  echo "rep $rep $(date +%T)"
done
for rep in 1 2; do for n in 512 1024; do
  pre m15-$n dist-m $M15 $n $rep ""
  pre t15-$n dist-t $M15 $n $rep "--prefill-attention tiled"
done; done
for n in 512 1024; do
  prof m-$n dist-m $M5 $n ""; prof t-$n dist-t $M5 $n "--prefill-attention tiled"
done
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r1.tgz prof *.json *.log 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
