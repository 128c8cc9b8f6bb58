# Session 19 run 4 (experiment build: WGFUSE_EXP_NO_UNROLL leaves the residual 64 x 64 tiles' columns to the
# driver's loop): q8_0 and f16 prefill at 512 tokens, per kernel, with and without UNROLL_K.
set -x
BUNDLE=bundle4.tgz source .baseline/s19/common.sh
R=$OUT/r4; mkdir -p $R
for dt in q8_0 f16; do
  VS="unroll:$D/wgfuse:;loop:$D/wgfuse::WGFUSE_EXP_NO_UNROLL=1"
  OUT=$R/$dt MODEL=$M5 REPS=3 LENGTHS=512,4000 DTYPE=$dt VARIANTS="$VS" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |down|one pass" | tee -a $R/pf.txt
done
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
