# Session 17 run 7 (H100): the committed rule (5f55ca8: q8_0 in 128 x 128 from 1,200 workgroups) against
# main 03de905, 0.5B q8_0 prefill at 2,048 and 3,000 tokens (c8ece32 took 64 x 128 there), 2 runs each.
BUNDLE=bundle7.tgz source .baseline/s17/common.sh
R=$OUT/r7; mkdir -p $R
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/q8_5 MODEL=$M5 REPS=2 DTYPE=q8_0 LENGTHS=2048,3000 PROFILE=0 VARIANTS="$V" timeout 80 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q8_5.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
