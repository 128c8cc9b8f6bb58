# Session 23 run 5: run 4's mixed-format one-dispatch decoder (560 tok/s on the 0.5B Q4_K_M file,
# the step decoder 1,080) with the quantized block size as a shift (with the format not a
# constant, `/ quant_block()` was a runtime division per group). dist-f: that build. 0.5B Q4_K_M
# and Q8_0 (single format) from llama.cpp's convert and quantize, decode 128 after 16.
BUNDLE=bundle5.tgz source .baseline/s23/common.sh
R=$OUT/r5; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
PP="--decode persistent --decode-check 32"
{
M5=$(build 0.5b)
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
$L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-Q4_K_M.gguf Q4_K_M > $R/quant05.log 2>&1 || echo "quantize failed"
for rep in 1 2 3; do
  dec f-steps-05-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf 16 128 $rep ""
  dec f-pers-05-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf 16 128 $rep "$PP"
done
} 2>&1 | tee -a $R/decode.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
