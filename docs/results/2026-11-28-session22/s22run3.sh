# Session 22 run 3: the persistent decoder's attention in tiles of up to 4 rounds of positions (each
# thread's rounds' K loads in flight together) and V sums with 8 loads in flight. dist: this change;
# dist-main: 6e7e2fb (run 1's build). 0.5B f16: 128 tokens after 16 and 64 after 4,000, persistent
# of both builds and the step decoder, 3 runs alternating; 1.5B f16 after 4,000, 2 runs; logits
# after 4,000 (24 tokens) compared.
export BUNDLE=bundle2.tgz
source .baseline/s22/common.sh
R=$OUT/r3; mkdir -p $R
M5=$(build 0.5b)
PP="--decode persistent --decode-check 32"
logits4k() {  # label, binary dir, model, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids 4000) -n 24 --temp 0 --ctx 4096 $4 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed"
}
{
for rep in 1 2 3; do
  dec prev-pers dist-main $M5 16 128 $rep "$PP"
  dec pers dist $M5 16 128 $rep "$PP"
  dec prev-pers-4k dist-main $M5 4000 64 $rep "$PP"
  dec pers-4k dist $M5 4000 64 $rep "$PP"
  dec steps-4k dist $M5 4000 64 $rep ""
done
logits4k lg-prev-pers-4k dist-main $M5 "$PP"; logits4k lg-pers-4k dist $M5 "$PP"; logits4k lg-steps-4k dist $M5 ""
cmp lg-pers-4k lg-prev-pers-4k; cmp lg-pers-4k lg-steps-4k; cmp lg-prev-pers-4k lg-steps-4k
M15=$(build 1.5b)
for rep in 1 2; do
  dec prev-pers-15-4k dist-main $M15 4000 64 $rep "$PP"
  dec pers-15-4k dist $M15 4000 64 $rep "$PP"
  dec steps-15-4k dist $M15 4000 64 $rep ""
done
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
