# Session 22 run 4: run 3's attention tiles raised the decode kernel's registers at 0.5B (the fitted
# grid fell from 256 to 128 workgroups). The rounds of positions a tile are now a variant part
# (rounds=N, V sums with 8 loads in flight in every case): 0.5B f16 after 16 and 4,000 positions,
# rounds 1 / 2 / 4 against 6e7e2fb (dist-main), the grid each one fits.
export BUNDLE=bundle3.tgz
source .baseline/s22/common.sh
R=$OUT/r4; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
{
for rep in 1 2; do
  dec prev-pers dist-main $M5 16 128 $rep "$PP"
  for r in 1 2 4; do dec pers-r$r dist $M5 16 128 $rep "$PP --persistent-variant split+down=4+ahead+rounds=$r"; done
done
for r in 1 2 4; do dec pers-r$r-4k dist $M5 4000 64 1 "$PP --persistent-variant split+down=4+ahead+rounds=$r"; done
dec prev-pers-4k dist-main $M5 4000 64 1 "$PP"
} 2>&1 | tee -a $R/decode.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
