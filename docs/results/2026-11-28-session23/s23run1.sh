# Session 23 run 1: quantized decode without int-to-float conversions. dist-a: f480766 (main at the
# session's start); dist-b: 68f7a7a (a quant's bits as the mantissa of 2^23 + q: the same bits);
# dist-c: b plus the scale (and offset) applied once to each group's dot in the step and persistent
# decoders' matrix-vector products. 0.5B decode 128 after 16, step and persistent decoders, 3 runs
# alternating; logits b vs a (bitwise expected) and c vs a; 1.5B q8_0 two runs.
source .baseline/s23/common.sh
R=$OUT/r1; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
for rep in 1 2 3; do
  for dt in q8_0 q4_k f16; do
    for b in a b c; do
      [ $dt = f16 ] && [ $b = b ] && continue
      dec $b-steps-$dt dist-$b $M5 16 128 $rep "--dtype $dt"
      dec $b-pers-$dt dist-$b $M5 16 128 $rep "--dtype $dt $PP"
    done
  done
done
for dt in q8_0 q4_k; do
  for b in a b c; do
    logits lg-$b-steps-$dt dist-$b $M5 "--dtype $dt"; logits lg-$b-pers-$dt dist-$b $M5 "--dtype $dt $PP"
  done
  cmp lg-b-steps-$dt lg-a-steps-$dt; cmp lg-b-pers-$dt lg-a-pers-$dt
  cmp lg-c-steps-$dt lg-a-steps-$dt; cmp lg-c-pers-$dt lg-a-pers-$dt; cmp lg-c-pers-$dt lg-c-steps-$dt
done
M15=$(build 1.5b)
for rep in 1 2; do
  for b in a b c; do
    dec $b-steps-15-q8_0 dist-$b $M15 16 128 $rep "--dtype q8_0"
    dec $b-pers-15-q8_0 dist-$b $M15 16 128 $rep "--dtype q8_0 $PP"
  done
done
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
