# Session 29 run 6: main b25f2d3 (l: the persistent prompt through the prefill, the split attention
# of run 5) against llama.cpp 0.7.0's Vulkan backend on the same F16 GGUF, decode after 16 and after
# 4,000 prompt tokens (llama-bench -d 0,4000), step and persistent decoders, 3 runs.
# Expected from runs 1 and 5: steps ~1,210 / ~985, persistent ~1,400 / ~780; llama.cpp ~615 / ~500.
START=$(date +%s); BUNDLE=bundle-e.txz source .baseline/s29/common.sh
R=/tmp/rn; mkdir -p $R /tmp/gg; O=$OUT/run6.txt
L=".baseline/llamacpp-run .baseline/llama"
{
M5=$(build 0.5b); echo "built $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert 0.5B failed"
timeout 150 $L llama-bench -m /tmp/gg/05-F16.gguf -ngl 99 -p 0 -n 64 -d 0,4000 -fa 1 -r 3 -o md 2>$R/lb05-F16.log
echo "llama.cpp done $(date +%T)"
for rep in 1 2 3; do for n in 16 4000; do
  dec steps-05-F16-$n dist-l /tmp/gg/05-F16.gguf $n 64 $rep ""
  dec pers-05-F16-$n dist-l /tmp/gg/05-F16.gguf $n 64 $rep "--decode persistent --decode-check 8"
done; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
