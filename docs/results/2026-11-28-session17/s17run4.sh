# Session 17 run 4 (H100): this tree (the normed prefill products' tile rule: 128 x 128 only from 512
# workgroups and never for q8_0, else 64 x 128 / 64 x 64 / 32 x 64; 64 x 128 with 2 token groups out)
# against main 03de905 (dist-main): logits, qwen_check, prefill_bench 0.5B and 1.5B in f16, q8_0, q4_k.
BUNDLE=bundle4.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r4; mkdir -p $R
{ for n in 512 4000; do cmp_bins $M5 0.5b $n; done; DT=q8_0 cmp_bins $M5 0.5b 512; } | tee $R/logits.txt
(cd bench/baselines && timeout 120 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -6) | tee $R/qwen_check.txt
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf5 MODEL=$M5 REPS=3 VARIANTS="$V" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf5.txt
OUT=$R/q8_5 MODEL=$M5 REPS=2 DTYPE=q8_0 LENGTHS=512,4000 VARIANTS="$V" timeout 90 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/q8_5.txt
OUT=$R/q4k_5 MODEL=$M5 REPS=2 DTYPE=q4_k LENGTHS=512 PROFILE=0 VARIANTS="$V" timeout 40 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q4k_5.txt
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 VARIANTS="$V" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf15.txt
OUT=$R/q8_15 MODEL=$M15 REPS=2 DTYPE=q8_0 LENGTHS=512 PROFILE=0 VARIANTS="$V" timeout 60 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q8_15.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
