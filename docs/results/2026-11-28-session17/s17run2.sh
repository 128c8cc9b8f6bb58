# Session 17 run 2 (H100): prefill tiles in two stages with constant stage offsets (steps in pairs, one
# barrier a step; this tree = main + that) against main 03de905; the same with one stage (= main's loop)
# and with Dawn's bounds checks off; per-kernel profiles of q8_0, q4_k and f16 storage at 512 tokens (main).
BUNDLE=bundle2.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r2; mkdir -p $R
for n in 512 4000; do cmp_bins $M5 0.5b $n; done | tee $R/logits.txt
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:;stages1:$D/wgfuse::WGFUSE_PREFILL_STAGES=1;unsafe:$D/wgfuse:--unsafe-no-robustness"
OUT=$R/pf5 MODEL=$M5 REPS=3 VARIANTS="$V" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf5.txt
for q in f16 q8_0 q4_k; do DT=$q D=dist-main/wgfuse-linux-x64 gate_up_us $M5 512; done 2>&1 | tee $R/quant_profile.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
