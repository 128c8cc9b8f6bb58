# Session 27 run 6: where main (m = 28616a8) stands on this H200 against llama.cpp 0.7.0's Vulkan
# backend, in one call, on the files llama.cpp wrote (convert_hf_to_gguf F16, llama-quantize Q8_0 and
# Q4_K_M) of the random-weight 0.5B and 1.5B folders: decode 128 after 16 (step decoder, persistent
# with --decode-check 8), prefill of 512 / 1,024 / 4,000 tokens (0.5B F16), llama-bench -fa 1.
START=$(date +%s); BUNDLE=bundle19.txz source .baseline/s27/common.sh
R=/tmp/r19; mkdir -p $R /tmp/gg; O=$OUT/decode.txt
L=".baseline/llamacpp-run .baseline/llama"
left() { echo $(( $1 - $(date +%s) + START )); }
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert 0.5B failed"
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15-F16.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert 1.5B failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-F16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
$L llama-quantize /tmp/gg/15-F16.gguf /tmp/gg/15-Q8_0.gguf Q8_0 > $R/quant15.log 2>&1 || echo "quantize 1.5B failed"
ls -la /tmp/gg; echo "files $(date +%T)"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
timeout 120 $L llama-bench -m /tmp/gg/05-F16.gguf -ngl 99 -p 4000,512,1024,4000 -n 128 -fa 1 -r 3 -o md 2>$R/lb05-F16.log
for q in Q8_0 Q4_K_M; do timeout 60 $L llama-bench -m /tmp/gg/05-$q.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o md 2>$R/lb05-$q.log; done
for q in F16 Q8_0; do timeout 60 $L llama-bench -m /tmp/gg/15-$q.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o md 2>$R/lb15-$q.log; done
echo "llama.cpp done $(date +%T), $(left 0) s"
for rep in 1 2 3; do for q in F16 Q8_0 Q4_K_M; do
  dec steps-05-$q dist-m /tmp/gg/05-$q.gguf 16 128 $rep ""
  [ $q != Q4_K_M ] && dec pers-05-$q dist-m /tmp/gg/05-$q.gguf 16 128 $rep "--decode persistent --decode-check 8"
done; done
for rep in 1 2; do for q in F16 Q8_0; do
  dec steps-15-$q dist-m /tmp/gg/15-$q.gguf 16 128 $rep ""
  dec pers-15-$q dist-m /tmp/gg/15-$q.gguf 16 128 $rep "--decode persistent --decode-check 8"
done; done
for rep in 1 2 3; do for n in 512 1024 4000; do pre pre-05-$n dist-m /tmp/gg/05-F16.gguf $n $rep ""; done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
} 2>&1 | tee -a $O
echo "done $(left 0) s" | tee -a $O
