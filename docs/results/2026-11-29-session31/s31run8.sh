# Session 31 run 8 (issue 23, a reading): what Dawn's bounds clamps cost the q8_0 products
# (main 2f75609's build, the 0.5B folder quantized to q8_0 at load; --unsafe-no-robustness drops
# the clamps): per kernel (--profile=9) and decode rate, 2 runs each.
START=$(date +%s); BUNDLE=bundle-7.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R/prof; O=$OUT/run8.txt
{
M5=$(build 0.5b); echo "built $(date +%T)"
for v in clamps none; do
  x=""; [ $v = none ] && x="--unsafe-no-robustness"
  timeout 120 dist-f/wgfuse-linux-x64/wgfuse generate -m $M5 --dtype q8_0 --prompt-ids $(ids 16) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 $x > /dev/null 2>$R/prof/$v.txt || echo "profile $v failed"
  grep -E "^(qkv|attention|o_proj|gate|down|lm_head|one pass)" $R/prof/$v.txt | sed "s/^/$v /"
done
for rep in 1 2; do dec clamps dist-f $M5 16 128 $rep "--dtype q8_0"; dec none dist-f $M5 16 128 $rep "--dtype q8_0 --unsafe-no-robustness"; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
