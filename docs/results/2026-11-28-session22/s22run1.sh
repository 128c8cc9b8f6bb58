# Session 22 run 1: 0.5B, ahead for quantized weights. dist: 6e7e2fb (ahead for every format but f32,
# the grid fitted to the decode kernel); dist-main: ff0ccd9. Decode 128 after 16, step and persistent
# decoders, f16 / q8_0 / q4_k quantized at load, 3 runs alternating; this build's persistent decoder
# also without ahead (split+down=4, main's default for quantized). Logits compared (24 tokens, not
# timed); prefill 512 of both builds (the refactored weight decode is every kernel's).
source .baseline/s22/common.sh
R=$OUT/r1; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
for rep in 1 2 3; do
  for dt in f16 q8_0 q4_k; do
    dec main-steps-$dt dist-main $M5 16 128 $rep "--dtype $dt"
    dec steps-$dt dist $M5 16 128 $rep "--dtype $dt"
    dec main-pers-$dt dist-main $M5 16 128 $rep "--dtype $dt $PP"
    dec pers-$dt dist $M5 16 128 $rep "--dtype $dt $PP"
    [ $dt != f16 ] && dec pers-noahead-$dt dist $M5 16 128 $rep "--dtype $dt $PP --persistent-variant split+down=4"
  done
done
for dt in q8_0 q4_k; do
  logits lg-main-steps-$dt dist-main $M5 "--dtype $dt"; logits lg-steps-$dt dist $M5 "--dtype $dt"
  logits lg-main-pers-$dt dist-main $M5 "--dtype $dt $PP"; logits lg-pers-$dt dist $M5 "--dtype $dt $PP"
  cmp lg-steps-$dt lg-main-steps-$dt; cmp lg-pers-$dt lg-main-pers-$dt; cmp lg-pers-$dt lg-steps-$dt
done
for rep in 1 2; do
  pre main-pre-q8_0 dist-main $M5 512 $rep "--dtype q8_0"; pre pre-q8_0 dist $M5 512 $rep "--dtype q8_0"
done
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
