# Session 31 run 4 (issue 23): q8_0 groups read with one vec4 load where a row has an even number
# of words (q: main + that + the split prefill attention) against main (m: aa0975e), on llama.cpp's
# own files (0.5B F16 / Q8_0 / Q4_K_M; the Q4_K_M's LM head and 13 matrices are q8_0).
# Predicted (run 3's profile): the q8_0 LM head 83 -> ~55-65 us (it reads 145 MB at 42% of copy
# bandwidth with 3 load instructions a group of 8), Q8_0 step decoder +3-6%, Q4_K_M +2-4%,
# F16 level; logits within 1e-6 of main's (the same arithmetic), tokens equal.
START=$(date +%s); BUNDLE=bundle-4.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R/prof /tmp/gg; O=$OUT/run4.txt
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
for q in Q8_0 Q4_K_M; do for b in m q; do lgq $b-$q dist-$b /tmp/gg/05-$q.gguf ""; done; cmp q-$q m-$q; done
lgq m-15 dist-m /tmp/gg/15-Q8_0.gguf ""; lgq q-15 dist-q /tmp/gg/15-Q8_0.gguf ""; cmp q-15 m-15
lgq mp-Q8_0 dist-m /tmp/gg/05-Q8_0.gguf "--decode persistent"; lgq qp-Q8_0 dist-q /tmp/gg/05-Q8_0.gguf "--decode persistent"; cmp qp-Q8_0 mp-Q8_0
for q in Q8_0 Q4_K_M; do
  timeout 120 dist-q/wgfuse-linux-x64/wgfuse generate -m /tmp/gg/05-$q.gguf --prompt-ids $(ids 16) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 --json $R/prof/$q.json > /dev/null 2>$R/prof/$q.txt || echo "profile $q failed"
done
for rep in 1 2 3; do for q in Q8_0 Q4_K_M F16; do for b in m q; do
  dec $b-steps-$q dist-$b /tmp/gg/05-$q.gguf 16 128 $rep ""
done; done
for b in m q; do dec $b-pers-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 16 128 $rep "--decode persistent --decode-check 8"; done
done
for rep in 1 2; do for b in m q; do
  dec $b-steps-15 dist-$b /tmp/gg/15-Q8_0.gguf 16 128 $rep ""
  pre $b-pre-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 512 $rep ""
done; pre q-pre-F16 dist-q /tmp/gg/05-F16.gguf 512 $rep ""; done
timeout 60 $L llama-bench -m /tmp/gg/15-Q8_0.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o md 2>$R/lb15.log
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r4.tgz prof *.log 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
