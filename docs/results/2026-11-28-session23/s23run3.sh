# Session 23 run 3: issue 23's measurement on files llama.cpp wrote, in one call: llama.cpp 0.7.0's
# convert_hf_to_gguf (F16) and llama-quantize (Q8_0, Q4_K_M) of the random-weight 0.5B and 1.5B
# folders; llama-bench (Vulkan, -ngl 99 -fa 1, prefill 512, decode 128) against wgfuse dist-e
# (4046d30's kernels: this session's kept build) on the same files: decode 128 after 16, step and
# persistent decoders, prefill 512.
BUNDLE=bundle3.tgz source .baseline/s23/common.sh
R=$OUT/r3; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
PP="--decode persistent --decode-check 32"
{
M5=$(build 0.5b)
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
ls -la /tmp/gg
for q in f16 Q8_0 Q4_K_M; do
  F=/tmp/gg/05-$q.gguf
  for rep in 1 2 3; do
    dec steps-05-$q dist-e $F 16 128 $rep ""
    dec pers-05-$q dist-e $F 16 128 $rep "$PP"
  done
  pre pre-05-$q dist-e $F 512 1 ""; pre pre-05-$q dist-e $F 512 2 ""
  timeout 100 $L llama-bench -m $F -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o md 2>$R/lb05-$q.log | tee $R/llamabench-05-$q.md
done
M15=$(build 1.5b)
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15-f16.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/15-f16.gguf /tmp/gg/15-$q.gguf $q > $R/quant15-$q.log 2>&1 || echo "quantize $q failed"; done
for q in Q8_0 Q4_K_M; do
  F=/tmp/gg/15-$q.gguf
  for rep in 1 2; do
    dec steps-15-$q dist-e $F 16 128 $rep ""
    dec pers-15-$q dist-e $F 16 128 $rep "$PP"
  done
  timeout 100 $L llama-bench -m $F -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o md 2>$R/lb15-$q.log | tee $R/llamabench-15-$q.md
done
} 2>&1 | tee -a $R/decode.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
