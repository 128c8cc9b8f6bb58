# Session 22 run 2: (A) run 1's one failure (this build's persistent f16 at 0.5B, "every logit is NaN"
# at the first token, once in 3) hunted: 6 runs each of this build with the grid fitted (the new probe
# dispatch), this build with --persistent-wg 256 (no probe dispatch), main; (B) 1.5B f16 and q8_0:
# step and persistent decoders of both builds, this build's persistent with the automatic grid (fitted
# to the decode kernel: main's timed out there) and with 132 as main's. Same bundle as run 1.
source .baseline/s22/common.sh
R=$OUT/r2; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
for rep in 1 2 3 4 5 6; do
  dec pers-f16 dist $M5 16 128 $rep "--dtype f16 $PP"
  dec pers-wg256-f16 dist $M5 16 128 $rep "--dtype f16 $PP --persistent-wg 256"
  dec main-pers-f16 dist-main $M5 16 128 $rep "--dtype f16 $PP"
  dec pers-nocheck-f16 dist $M5 16 128 $rep "--dtype f16 --decode persistent --decode-check 0"
done
grep -l "NaN" $R/*.log
M15=$(build 1.5b)
dec main-pers-auto-15-f16 dist-main $M15 16 128 1 "--dtype f16 $PP"
for rep in 1 2; do
  for dt in f16 q8_0; do
    dec main-steps-15-$dt dist-main $M15 16 128 $rep "--dtype $dt"
    dec steps-15-$dt dist $M15 16 128 $rep "--dtype $dt"
    dec main-pers132-15-$dt dist-main $M15 16 128 $rep "--dtype $dt $PP --persistent-wg 132"
    dec pers132-15-$dt dist $M15 16 128 $rep "--dtype $dt $PP --persistent-wg 132"
    dec pers-15-$dt dist $M15 16 128 $rep "--dtype $dt $PP"
  done
done
logits lg-main-pers-15-q8_0 dist-main $M15 "--dtype q8_0 $PP --persistent-wg 132"; logits lg-pers-15-q8_0 dist $M15 "--dtype q8_0 $PP --persistent-wg 132"
logits lg-steps-15-q8_0 dist $M15 "--dtype q8_0"
cmp lg-pers-15-q8_0 lg-main-pers-15-q8_0; cmp lg-pers-15-q8_0 lg-steps-15-q8_0
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
