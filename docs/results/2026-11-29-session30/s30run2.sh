# Session 30 run 2: attend_chunk reading q straight from memory, its loads in flight with K's
# (q: v + that) against v (run 1's V batches) and main (x); where attend_short stops paying now
# (--attn-short-max 128 / 256 against the default 512 at 200-500 positions, build q).
# Predicted for q against v: one round trip and one barrier less a layer wherever the split runs
# (0.5B from 512 positions): +1-2% at 1,000-4,000, level at 16 and 300 (attend_short unchanged).
# Short-max: run 1 had 300 positions 15% slower than 16; the split in chunks of 64 (now 128
# threads, V in one batch) may pay from ~256.
START=$(date +%s); BUNDLE=bundle-2.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R /tmp/p; O=$OUT/run2.txt
lg() {  # label, binary dir, model, prompt length
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 16 1000 4000; do for b in x q; do lg $b-$n dist-$b $M5 $n; done; cmp q-$n x-$n; done
for b in x v q; do lg ${b}15-3000 dist-$b $M15 3000; done; cmp v15-3000 x15-3000; cmp q15-3000 x15-3000
for rep in 1 2 3; do for n in 16 300 500 1000 2000 4000; do for b in x v q; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 200 300 400 500; do for s in 128 256 512; do
  dec q-sm$s-$n dist-q $M5 $n 64 $rep "--attn-short-max $s"
done; done; done
for rep in 1 2; do for n in 1000 4000; do for b in x v q; do
  dec $b-15-$n dist-$b $M15 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 200; do for s in 128 256; do
  dec q15-sm$s-$n dist-q $M15 $n 64 $rep "--attn-short-max $s"
done; done; done
for b in v q; do for n in 1000 4000; do
  timeout 150 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > /tmp/p/$b-$n.txt 2>&1
  echo "$b $n $(grep -E '^attention|one pass' /tmp/p/$b-$n.txt | tr -s ' ' | tr '\n' '|')"
done; done
} 2>&1 | tee -a $O
cd /tmp && tar czf $OUT/p.tgz p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
