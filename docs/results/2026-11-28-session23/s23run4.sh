# Session 23 run 4: the one-dispatch decoder over files of mixed tensor types (llama.cpp's Q4_K_M:
# q5_0, q8_0, q4_K, q6_K at 0.5B). dist-f: each matrix's offset and format from a table
# (MIXED_FORMATS); its step decoder is run 3's (the decode compiles to the same code where one
# format is stored). The same llama.cpp-written files as run 3 (convert_hf_to_gguf,
# llama-quantize); single-format files against run 3's figures. Decode 128 after 16.
BUNDLE=bundle4.tgz source .baseline/s23/common.sh
R=$OUT/r4; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
PP="--decode persistent --decode-check 32"
{
M5=$(build 0.5b)
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
for rep in 1 2 3; do
  dec f-steps-05-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf 16 128 $rep ""
  dec f-pers-05-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf 16 128 $rep "$PP"
done
for q in f16 Q8_0; do
  for rep in 1 2 3; do
    dec f-pers-05-$q dist-f /tmp/gg/05-$q.gguf 16 128 $rep "$PP"
  done
done
logits lg-f-steps-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf ""; logits lg-f-pers-Q4_K_M dist-f /tmp/gg/05-Q4_K_M.gguf "$PP"
cmp lg-f-pers-Q4_K_M lg-f-steps-Q4_K_M
M15=$(build 1.5b)
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15-f16.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert failed"
$L llama-quantize /tmp/gg/15-f16.gguf /tmp/gg/15-Q4_K_M.gguf Q4_K_M > $R/quant15.log 2>&1 || echo "quantize failed"
for rep in 1 2; do
  dec f-steps-15-Q4_K_M dist-f /tmp/gg/15-Q4_K_M.gguf 16 128 $rep ""
  dec f-pers-15-Q4_K_M dist-f /tmp/gg/15-Q4_K_M.gguf 16 128 $rep "$PP"
done
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
