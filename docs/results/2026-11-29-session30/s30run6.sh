# Session 30 run 6: the persistent decoder's V sum with a tile's 16 words of a thread in flight
# (tile_v), requested before the tile's softmax (p: main 27b2a65 + that) against main (x, 976dc33;
# the persistent kernel unchanged up to 27b2a65). 0.5B bf16, --decode persistent.
# Predicted: a split tile (64 positions, 4 parts) costs 1 trip of V loads instead of 4: at 4,000
# positions (4 tiles a block) ~12 trips a layer less: 790 -> ~900 tok/s (+10-15%); after 1,000 /
# 2,000 +5-8%; after 16 level (one position a part). Logits within 1e-6 of x's, tokens equal.
START=$(date +%s); BUNDLE=bundle-6.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run6.txt
lg() {  # label, binary dir, model, prompt length
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 --decode persistent --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); echo "built $(date +%T)"
for b in x p; do lg $b-4000 dist-$b $M5 4000; done; cmp p-4000 x-4000
for rep in 1 2 3; do for n in 16 1000 2000 4000; do for b in x p; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep "--decode persistent"
done; done; done
for rep in 1 2; do dec steps-05-4000 dist-p $M5 4000 64 $rep ""; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
