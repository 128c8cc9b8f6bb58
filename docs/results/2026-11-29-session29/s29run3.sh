# Session 29 run 3: the persistent decoder's KV cache read with plain loads (p = branch kv-plain)
# instead of atomic loads (n = main a29b1ff). A dispatch reads only positions that earlier
# dispatches stored (its own position's K/V come from CUR_W), so the cache needs no atomics; plain
# loads may be 16-byte and L1-cached where an atomic load is a 4-byte L2 round trip.
# Predicted: at 16 positions level (the attention's cache reads are few); after 4,000 tokens
# +10-20% (n ~770 tok/s; the split attention's tiles wait on their K and V loads in turn);
# logits within 1e-6 of n's, tokens equal.
START=$(date +%s); BUNDLE=bundle-b.txz source .baseline/s29/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run3.txt
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
P="--decode persistent --decode-check 8"
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 16 4000; do lg n-$n dist-n $M5 $n "$P"; lg p-$n dist-p $M5 $n "$P"; cmp p-$n n-$n; done
lg n15-4000 dist-n $M15 4000 "$P"; lg p15-4000 dist-p $M15 4000 "$P"; cmp p15-4000 n15-4000
for rep in 1 2 3; do for n in 16 1000 2000 4000; do for b in n p; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep "$P"
done; done; done
for rep in 1 2; do for b in n p; do
  dec $b-15-4000 dist-$b $M15 4000 64 $rep "$P"
  dec $b-15-16 dist-$b $M15 16 64 $rep "$P"
  dec $b-05q8-16 dist-$b $M5 16 64 $rep "$P --dtype q8_0"
done; done
dec steps-05-4000 dist-n $M5 4000 64 1 ""
dec steps-15-4000 dist-n $M15 4000 64 1 ""
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
