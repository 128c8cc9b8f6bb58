# Session 31 run 6 (issue 23): the quantized LM head in the smallest team with 4 rows each (l: main
# 1ac3e39 + that) against main (m: aa0975e), on llama.cpp's own files. Predicted from run 5's kernel
# benchmark: the q8_0 LM head 83 -> ~62 us in the step (0.5B), 119 -> ~92 (1.5B): 0.5B Q8_0 and
# Q4_K_M (its LM head is q8_0) steps +2.5%, 1.5B Q8_0 +2%; F16 and the persistent decoder level.
START=$(date +%s); BUNDLE=bundle-6.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R/prof /tmp/gg; O=$OUT/run6.txt
L=".baseline/s31/llamacpp-run .baseline/llama"
lgq() {  # label, binary dir, model, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids 16) -n 24 --temp 0 --ctx 4096 $4 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15-F16.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert 1.5B failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-F16.gguf /tmp/gg/05-$q.gguf $q > $R/quant-$q.log 2>&1 || echo "quantize $q failed"; done
$L llama-quantize /tmp/gg/15-F16.gguf /tmp/gg/15-Q8_0.gguf Q8_0 > $R/quant15.log 2>&1 || echo "quantize 1.5B failed"
echo "files $(date +%T)"
for q in Q8_0 Q4_K_M; do for b in m l; do lgq $b-$q dist-$b /tmp/gg/05-$q.gguf ""; done; cmp l-$q m-$q; done
lgq m-15 dist-m /tmp/gg/15-Q8_0.gguf ""; lgq l-15 dist-l /tmp/gg/15-Q8_0.gguf ""; cmp l-15 m-15
for q in Q8_0 Q4_K_M; do
  timeout 120 dist-l/wgfuse-linux-x64/wgfuse generate -m /tmp/gg/05-$q.gguf --prompt-ids $(ids 16) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 --json $R/prof/$q.json > /dev/null 2>$R/prof/$q.txt || echo "profile $q failed"
done
timeout 120 dist-l/wgfuse-linux-x64/wgfuse generate -m /tmp/gg/15-Q8_0.gguf --prompt-ids $(ids 16) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 --json $R/prof/15.json > /dev/null 2>$R/prof/15.txt || echo "profile 1.5B failed"
for rep in 1 2 3; do for q in Q8_0 Q4_K_M F16; do for b in m l; do
  dec $b-steps-$q dist-$b /tmp/gg/05-$q.gguf 16 128 $rep ""
done; done
for b in m l; do dec $b-steps-15 dist-$b /tmp/gg/15-Q8_0.gguf 16 128 $rep ""; done
for b in m l; do dec $b-pers-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 16 128 $rep "--decode persistent --decode-check 8"; done
done
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r6.tgz prof *.log 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
