# Prepared in session 28 for the next session's first run (~6 min). Two questions, one call:
# 1. Decode at long contexts against llama.cpp 0.7.0's Vulkan backend on the same files (issue 24:
#    >= 85% of the short rate at 4,000 positions). llama-bench -d N: decode after N positions.
#    wgfuse (k = main 842eb68): the step decoder and the persistent one after 16 / 600 / 1,000 /
#    2,000 / 4,000 prompt tokens, 64 tokens, 3 runs. Expected from session 28 run 7 (steps, 0.5B
#    bf16 folder): 1,243 / 1,106 / 1,083 / 1,037 / 931 tok/s; persistent ~785 at 4,000 (run 2);
#    llama.cpp at depth 4,000 ~550 (H100, 2026-11-26).
# 2. r = branch attn-rmw: the combiner takes the chunks' output words by exchanging zero in (and
#    re-takes a zero: in flight), so the writers store without waiting (session 28 run 5: the wait
#    ~3 us a layer at 4,000, the relaxed stores alone 992-997 us a token against 1,057-1,078).
#    Predicted: r ~2-3 us a layer faster than k at 4,000 (~1,020 us a token against ~1,075), less
#    at 1,000; logits within 1e-6 of k's, tokens equal.
# carry [".baseline/s28", ".baseline/tok", ".gl", ".baseline/llama", ".baseline/llamacpp-run"]
START=$(date +%s); BUNDLE=bundle-next.txz source .baseline/s28/common.sh
R=/tmp/rn; mkdir -p $R /tmp/gg $OUT/p; O=$OUT/decode.txt
L=".baseline/llamacpp-run .baseline/llama"
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 1000 4000; do lg k-$n dist-k $M5 $n ""; for i in 1 2 3; do lg r-$n-$i dist-r $M5 $n ""; cmp k-$n r-$n-$i; done; done
lg k15-4000 dist-k $M15 4000 ""; lg r15-4000 dist-r $M15 4000 ""; cmp k15-4000 r15-4000
for rep in 1 2 3; do for b in k r; do for n in 600 1000 2000 4000; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep ""
done; done; done
for rep in 1 2; do for b in k r; do dec $b-15-4000 dist-$b $M15 4000 64 $rep ""; done; done
for b in k r; do
  timeout 150 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > $OUT/p/$b-long.txt 2>&1
  echo "$b $(grep -E '^attention|one pass' $OUT/p/$b-long.txt | tr -s ' ' | tr '\n' '|')"
done
echo "A/B done $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert 0.5B failed"
timeout 150 $L llama-bench -m /tmp/gg/05-F16.gguf -ngl 99 -p 0 -n 64 -d 0,600,1000,2000,4000 -fa 1 -r 3 -o md 2>$R/lb05-F16.log
echo "llama.cpp done $(date +%T)"
for rep in 1 2 3; do for n in 16 600 1000 2000 4000; do
  dec steps-05-F16-$n dist-k /tmp/gg/05-F16.gguf $n 64 $rep ""
  dec pers-05-F16-$n dist-k /tmp/gg/05-F16.gguf $n 64 $rep "--decode persistent --decode-check 8"
done; done
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
