# Session 23 run 2: dist-a: f480766 (main at the session's start); dist-d: the scale (and offset)
# applied once to each group's dot with int-to-float conversions as main (run 1's c without the
# mantissa trick, which run 1 measured slower); dist-e: d plus down_proj's split staged from xs's
# start, the chunk its iteration's units touch (xs 35.8 -> 9.0 KB at 1.5B, 19.5 -> 4.9 KB at 0.5B). Decode 128
# after 16, 3 runs alternating; logits d vs a, e vs d (bitwise expected); 1.5B f16 / q8_0 with the
# automatic grid (e: does it fit 256?); 0.5B after 4,000 tokens.
BUNDLE=bundle2.tgz source .baseline/s23/common.sh
R=$OUT/r2; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
for rep in 1 2 3; do
  for dt in q8_0 q4_k f16; do
    for b in a d e; do
      [ $b != e ] && dec $b-steps-$dt dist-$b $M5 16 128 $rep "--dtype $dt"
      dec $b-pers-$dt dist-$b $M5 16 128 $rep "--dtype $dt $PP"
    done
  done
done
for dt in q8_0 q4_k f16; do
  for b in a d e; do logits lg-$b-pers-$dt dist-$b $M5 "--dtype $dt $PP"; done
  logits lg-d-steps-$dt dist-d $M5 "--dtype $dt"
  cmp lg-d-pers-$dt lg-a-pers-$dt; cmp lg-e-pers-$dt lg-d-pers-$dt; cmp lg-d-pers-$dt lg-d-steps-$dt
done
M15=$(build 1.5b)
for rep in 1 2; do
  for dt in q8_0 f16; do
    for b in a d e; do
      [ $b = d ] && dec $b-steps-15-$dt dist-$b $M15 16 128 $rep "--dtype $dt"
      dec $b-pers-15-$dt dist-$b $M15 16 128 $rep "--dtype $dt $PP"
    done
  done
done
for b in a e; do dec $b-pers-4k-f16 dist-$b $M5 4000 128 1 "--dtype f16 $PP"; done
dec d-steps-4k-f16 dist-d $M5 4000 128 1 "--dtype f16"
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
