# Session 14 run 6 (H100): run 5's build; per-kernel profiles of forced tiles, for the residual products' rule:
# 1.5B at 1,024 and 4,000 tokens (64 x 64 split 1 and 2, 128 x 128), 0.5B 64 x 64 split 3 at 1,024 and 8 at 512.
BUNDLE=bundle5.tgz source .baseline/s14/common.sh
R=$OUT/r6; mkdir -p $R
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
p() { timeout 60 $D/wgfuse generate -m $1 --prompt-ids $(ids $2) -n 1 --temp 0 --dtype f16 --ctx 4096 --warmup 1 --prefill-tile $3 --profile-prefill=3 2>$R/$4-$3-$2.txt >/dev/null; echo "$4 $2 $3: $(grep -E '^(qkv|o_proj|gate|down)' $R/$4-$3-$2.txt | awk '{printf "%s %s; ", $1, $3}')"; }
{ p $M5 1024 64x64x3 m5; p $M5 512 64x64x8 m5; } | tee $R/sweep.txt
M15=$(build 1.5b)
for n in 1024 4000; do for t in 64x64x1 64x64x2 128x128x1; do p $M15 $n $t m15; done; done | tee -a $R/sweep.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
