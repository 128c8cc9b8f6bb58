# Session 15 run 4b (H100): as run 4a for 1.5B f16 (prefill_bench 3 runs; logits at 1,024 and 4,000 tokens),
# and llama.cpp 0.7.0's Vulkan prefill of the same weights with a 4,000-token test first (llama-bench's
# first test scattered in runs 2-3).
BUNDLE=bundle4.tgz source .baseline/s15/common.sh
R=$OUT/r4b; mkdir -p $R
source .baseline/s15/fns.sh
M15=$(build 1.5b)
for n in 1024 4000; do cmp_logits $M15 1.5b $n; done | tee $R/logits.txt
V="base:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf15 MODEL=$M15 REPS=3 VARIANTS="$V" timeout 240 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert failed"
timeout 120 $L llama-bench -m /tmp/gg/15.gguf -ngl 99 -p 4000,512,1024,4000 -n 0 -fa 1 -r 5 -o md 2>$R/lb15.log | tee $R/llamabench_15b.md
cd $OUT && tar czf r4b.tgz r4b && rm -rf r4b
