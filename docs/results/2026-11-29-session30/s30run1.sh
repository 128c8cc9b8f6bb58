# Session 30 run 1: the attention kernels' V sum in batches of 16 loads in flight, the first batch
# requested before the softmax (v: after attend_chunk's scores, at attend_short's start; w: also
# attend_chunk's at its start), against main (x, 976dc33).
# Predicted: attend_chunk at 4,000 positions (chunks of 128, 16 positions a thread: 4 trips of V
# loads -> 1, overlapping the reductions) ~3 us a call less standalone, +4-6% decode; 600-2,000
# (chunks of 64: 2 trips -> 1) +1-3%; attend_short at 16 (V's one trip now beside K's) +1-3%, at
# 300-500 (up to 8 trips -> 2) +2-4%. 1.5B (head_dim 128: 4 slices, 16 positions a thread at
# chunks of 64) +2-4% at 1,000-4,000. Logits within 1e-6 of x's (the V sum's order changed), tokens equal.
START=$(date +%s); BUNDLE=bundle-1.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R /tmp/p; O=$OUT/run1.txt
lg() {  # label, binary dir, model, prompt length
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 16 400 1000 4000; do for b in x v w; do lg $b-$n dist-$b $M5 $n; done; cmp v-$n x-$n; cmp w-$n x-$n; done
for b in x v w; do lg $b15-3000 dist-$b $M15 3000; done; cmp v15-3000 x15-3000; cmp w15-3000 x15-3000
for rep in 1 2 3; do for n in 16 300 500 1000 2000 3000 4000; do for b in x v w; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 16 1000 4000; do for b in x v w; do
  dec $b-15-$n dist-$b $M15 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 1200 1600; do for f in 1024 2048; do
  dec v-lf$f-$n dist-v $M5 $n 64 $rep "--attn-long-from $f"
done; done; done
for b in x v w; do for n in 300 4000; do
  timeout 150 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > /tmp/p/$b-$n.txt 2>&1
  echo "$b $n $(grep -E '^attention|one pass' /tmp/p/$b-$n.txt | tr -s ' ' | tr '\n' '|')"
done; done
} 2>&1 | tee -a $O
cd /tmp && tar czf $OUT/p.tgz p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
