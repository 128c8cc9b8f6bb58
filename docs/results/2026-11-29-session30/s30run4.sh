# Session 30 run 4: the split's shape at 2,000 and 4,000 positions after run 3's change (build s,
# main 30c3fba's kernels), by flags: default (chunks 64, 128 from 2,048, a head a workgroup);
# --attn-chunk 128 (256 from 2,048: 256 threads); --attn-heads 7 (a kv group's 7 heads a
# workgroup: K/V read once a workgroup, the V batch shared); --attn-heads 7 --attn-chunk 32.
# Question: does anything else reach issue 24's 85% at 4,000 (run 3: 84.5% = 1,027.5 / 1,216.4)?
START=$(date +%s); BUNDLE=bundle-4.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run4.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for rep in 1 2 3; do
  dec s-05-16 dist-s $M5 16 64 $rep ""
  for n in 2000 4000; do
    dec s-05-$n dist-s $M5 $n 64 $rep ""
    dec c128-05-$n dist-s $M5 $n 64 $rep "--attn-chunk 128"
    dec h7-05-$n dist-s $M5 $n 64 $rep "--attn-heads 7"
    dec h7c32-05-$n dist-s $M5 $n 64 $rep "--attn-heads 7 --attn-chunk 32"
  done
done
for rep in 1 2; do
  dec s-15-16 dist-s $M15 16 64 $rep ""
  for n in 4000; do
    dec s-15-$n dist-s $M15 $n 64 $rep ""
    dec c128-15-$n dist-s $M15 $n 64 $rep "--attn-chunk 128"
    dec h6-15-$n dist-s $M15 $n 64 $rep "--attn-heads 6"
  done
done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
