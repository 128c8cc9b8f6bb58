# Session 17 run 5 (H100): this tree (run 4's tile rule with q8_0 taking 128 x 128 from 2,048 workgroups)
# against main 03de905: 0.5B q8_0 and f16 prefill at 512, 1,024, 4,000 tokens (per-kernel profiles).
BUNDLE=bundle5.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r5; mkdir -p $R
DT=q8_0 cmp_bins $M5 0.5b 1024 | tee $R/logits.txt
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/q8_5 MODEL=$M5 REPS=2 DTYPE=q8_0 VARIANTS="$V" timeout 120 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/q8_5.txt
OUT=$R/pf5 MODEL=$M5 REPS=2 VARIANTS="$V" PROFILE=0 timeout 90 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf5.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
