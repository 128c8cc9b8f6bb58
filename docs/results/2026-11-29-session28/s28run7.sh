# Session 28 run 7: the kept change (k = branch attn-last: the chunks combined by each head
# group's last workgroup after its exchanges returned; one pass over the chunks) against main
# (m) in one call, over context lengths. Run 4 measured the same kernels: 600 / 1,000 positions
# -8%, 4,000 level, 1.5B at 4,000 level. Predicted the same, 2,000 in between (~-3%).
START=$(date +%s); BUNDLE=bundle7.txz source .baseline/s28/common.sh
R=/tmp/r7; mkdir -p $R; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
for L in 2000 4000; do lg m-05-$L dist-m $M5 $L ""; lg k-05-$L dist-k $M5 $L ""; cmp m-05-$L k-05-$L; done
for rep in 1 2 3; do for b in m k; do
  dec $b-05-16 dist-$b $M5 16 128 $rep ""
  dec $b-05-600 dist-$b $M5 600 64 $rep ""
  dec $b-05-1000 dist-$b $M5 1000 64 $rep ""
  dec $b-05-2000 dist-$b $M5 2000 64 $rep ""
  dec $b-05-4000 dist-$b $M5 4000 64 $rep ""
done; done
for rep in 1 2; do for b in m k; do
  dec $b-15-1000 dist-$b $M15 1000 64 $rep ""
  dec $b-15-4000 dist-$b $M15 4000 64 $rep ""
  dec $b-05q-1000 dist-$b $M5 1000 64 $rep "--dtype q8_0"
done; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
