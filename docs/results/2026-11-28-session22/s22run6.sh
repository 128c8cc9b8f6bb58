# Session 22 run 6: the K-dot quarters through xs instead of a red twice as large (run 5: with it the
# 0.5B decode kernel fitted 128 workgroups, not 256, whatever the rounds). 0.5B f16, rounds=4 (the
# default) against 6e7e2fb (dist-main) after 16 and 4,000 positions, the grid each fits.
export BUNDLE=bundle5.tgz
source .baseline/s22/common.sh
R=$OUT/r6; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
dec prev-pers dist-main $M5 16 128 1 "$PP"
dec pers dist $M5 16 128 1 "$PP"
dec pers dist $M5 16 128 2 "$PP"
dec pers-4k dist $M5 4000 64 1 "$PP"
dec prev-pers-4k dist-main $M5 4000 64 1 "$PP"
} 2>&1 | tee -a $R/decode.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
