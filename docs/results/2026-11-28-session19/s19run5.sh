# Session 19 run 5: the tree (2212a4b) and llama.cpp 0.7.0's Vulkan backend on the same random 0.5B (F16 GGUF),
# prefill at 512 / 1,024 / 4,000 tokens in one call; llama-bench right after wgfuse's runs (warm clocks) and
# once more with its own warm-up prefix.
set -x
BUNDLE=bundle5.tgz source .baseline/s19/common.sh
R=$OUT/r5; mkdir -p $R
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
OUT=$R/pf MODEL=$M5 REPS=5 PROFILE=0 VARIANTS="tree:$D/wgfuse:" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | tee $R/clock_before.txt
timeout 150 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 4000,512,1024,4000 -n 0 -fa 1 -r 5 -o md 2>$R/lb.log | tee $R/llamabench.md
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | tee $R/clock_after.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
