# Session 14 run 4 (H100): the tile rule as committed (residual products 128 x 128 split along K into up to
# 8 slices; Q/K/V 64 x 64; gate/up 128 x 128) against main (dist-main): prefill_bench.sh at 512, 1,024 and
# 4,000 tokens (5 interleaved runs, profiles) on 0.5B, then on 1.5B (3 runs).
BUNDLE=bundle4.tgz source .baseline/s14/common.sh
R=$OUT/r4; mkdir -p $R
OUT=$R/pf MODEL=$M5 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;tiles:$D/wgfuse:" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=3 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;tiles:$D/wgfuse:" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
(cd bench/baselines && timeout 200 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -7) | tee $R/qwen_check.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
