# Session 14 run 5 (H100): three tile rules of one experiment build (WGFUSE_PREFILL_RULE, not kept; the K loop's
# start a constant 0 when unsplit in all three) against main (dist-main), prefill_bench.sh at 512, 1,024 and
# 4,000 tokens, 0.5B (3 runs) and 1.5B (2 runs), f16 storage:
#   r0 = run 4's rule; r1 = meant as main's rule with 128 x 128 split where it finds no tile of 256 workgroups, as built
#   main's rule with the split only where even its 32 x 64 fallback makes under 256 (not reported in RESULTS);
#   r2 = main's rule for the normed products, every residual product 128 x 128 split.
BUNDLE=bundle5.tgz source .baseline/s14/common.sh
R=$OUT/r5; mkdir -p $R
V="main:dist-main/wgfuse-linux-x64/wgfuse:;r0:$D/wgfuse::WGFUSE_PREFILL_RULE=0;r1:$D/wgfuse::WGFUSE_PREFILL_RULE=1;r2:$D/wgfuse::WGFUSE_PREFILL_RULE=2"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$V" timeout 280 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 VARIANTS="$V" timeout 280 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
for f in $R/pf/profile/*-1024.log $R/pf15/profile/*-1024.log $R/pf15/profile/*-4000.log; do echo "== $f"; grep -E "^(qkv|o_proj|gate|down|one)" $f | awk '{print $1, $3}' | tr '\n' ' '; echo; done | tee $R/profiles.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
