# Session 31 run 3 (issue 23, planning data): where the step decoder's time goes on llama.cpp's own
# files, F16 against Q8_0 and Q4_K_M (0.5B, convert_hf_to_gguf + llama-quantize), per kernel
# (`--profile=9`, each dispatch in its own pass, GPU timestamps), and llama.cpp 0.7.0 Vulkan's tg128
# on the same files in the same call. main aa0975e's decode (the tree's decode kernels are main's).
START=$(date +%s); BUNDLE=bundle-2.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R/prof /tmp/gg; O=$OUT/run3.txt
L=".baseline/s31/llamacpp-run .baseline/llama"
{
M5=$(build 0.5b); echo "built $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-F16.gguf /tmp/gg/05-$q.gguf $q > $R/quant-$q.log 2>&1 || echo "quantize $q failed"; done
ls -la /tmp/gg; echo "files $(date +%T)"
for q in F16 Q8_0 Q4_K_M; do
  timeout 120 dist-m/wgfuse-linux-x64/wgfuse generate -m /tmp/gg/05-$q.gguf --prompt-ids $(ids 16) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 --json $R/prof/$q.json > /dev/null 2>$R/prof/$q.txt || echo "profile $q failed"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
for q in Q8_0 Q4_K_M F16; do timeout 60 $L llama-bench -m /tmp/gg/05-$q.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o md 2>$R/lb-$q.log; done
for rep in 1 2 3; do for q in F16 Q8_0 Q4_K_M; do dec steps-$q dist-m /tmp/gg/05-$q.gguf 16 128 $rep ""; done; done
for rep in 1 2; do for q in Q8_0; do dec pers-$q dist-m /tmp/gg/05-$q.gguf 16 128 $rep "--decode persistent --decode-check 8"; done; done
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r3.tgz prof *.log 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
