# Session 18 run 7: llama.cpp 0.7.0's Vulkan prefill again (run 6 measured 16k at 512 tokens where
# session 15 had 55k): the GPU kept busy first (a 4,000-token pass), then 512 / 1,024 / 512, 5 runs;
# nvidia-smi's SM clock before and after.
set -x
BUNDLE=bundle6.tgz source .baseline/s18/common.sh
R=$OUT/r7; mkdir -p $R
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm --format=csv | tee $R/clocks.txt
timeout 150 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 4000,512,1024,512 -n 0 -fa 1 -r 5 -o md 2>$R/lb05.log | tee $R/llamabench_05b.md
timeout 100 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 512 -n 0 -fa 1 -r 20 -o md 2>>$R/lb05.log | tee -a $R/llamabench_05b.md
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm --format=csv | tee -a $R/clocks.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
