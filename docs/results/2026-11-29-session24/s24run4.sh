# Session 24 run 4: the one-dispatch decoder over llama.cpp's 0.5B Q4_K_M (q5_0, q8_0, q6_K, q4_K)
# with the format a runtime value and now no branch in a group's decode (quant_group_any: every
# format's fields by select), after run 2's unconditional loads (780 tok/s; the step decoder ~1,064).
# dist-m: main (0f09e81); dist-y: branch mixed-switch. Decode 128 after 16.
BUNDLE=bundle4.txz source .baseline/s24/common.sh
R=$OUT/r4; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
PP="--decode persistent --decode-check 32"
{
M5=$(build 0.5b); echo "built $M5 $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
for rep in 1 2 3; do
  dec m-steps-Q4_K_M dist-m /tmp/gg/05-Q4_K_M.gguf 16 128 $rep ""
  dec y-pers-Q4_K_M dist-y /tmp/gg/05-Q4_K_M.gguf 16 128 $rep "$PP"
  dec m-pers-Q8_0 dist-m /tmp/gg/05-Q8_0.gguf 16 128 $rep "$PP"
  dec y-pers-Q8_0 dist-y /tmp/gg/05-Q8_0.gguf 16 128 $rep "$PP"
done
logits lg-m-steps dist-m /tmp/gg/05-Q4_K_M.gguf ""; logits lg-y-pers dist-y /tmp/gg/05-Q4_K_M.gguf "$PP"
cmp lg-y-pers lg-m-steps
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
