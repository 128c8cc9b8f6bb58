# Session 24 run 5: quant_words as four word loads in the vec4's order (branch loads-together, on
# main; the format a constant). Run 2 measured this form (in the mixed-format branch) 1.4-2.7%
# faster in the step decoder, but main ran first in every pair. Here the order alternates.
# dist-m: main (0f09e81); dist-l: loads-together. Decode 128 after 16; prefill 512.
BUNDLE=bundle5.txz source .baseline/s24/common.sh
R=$OUT/r5; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
{
M5=$(build 0.5b); echo "built $M5 $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
for rep in 1 2 3 4; do
  o="m l"; [ $((rep % 2)) = 0 ] && o="l m"
  for b in $o; do
    dec $b-steps-Q4_K_M dist-$b /tmp/gg/05-Q4_K_M.gguf 16 128 $rep ""
    dec $b-steps-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 16 128 $rep ""
  done
done
for rep in 1 2; do for b in m l; do pre $b-pre512-Q4_K_M dist-$b /tmp/gg/05-Q4_K_M.gguf 512 $rep ""; done; done
logits lg-m dist-m /tmp/gg/05-Q4_K_M.gguf ""; logits lg-l dist-l /tmp/gg/05-Q4_K_M.gguf ""; cmp lg-l lg-m
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
