# Session 28 run 2: where the step decoder's time goes at 4,000 positions (77% of its short rate;
# issue 24 wants 85%): --profile per kernel short and long, chunk sizes, --fusion full's long
# layer (o_proj_combine), and the rates; 1.5B q8_0's step kernels (run 7 had f16 only).
START=$(date +%s); BUNDLE=bundle1.txz source .baseline/s28/common.sh
R=/tmp/r2; mkdir -p $R $OUT/p; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
prof() {  # label model prompt-len extra
  timeout 150 dist-m/wgfuse-linux-x64/wgfuse generate -m $2 --prompt-ids $(ids $3) -n 32 --warmup 16 --temp 0 --ctx 4096 $4 --profile=9 > $OUT/p/$1.txt 2>&1 || echo "$1 failed"
  echo "== $1"; grep -E "attention|combine|o_proj|one pass|total|qkv|gate|down|lm_head" $OUT/p/$1.txt | head -20
}
prof short-f16 $M5 16 ""
prof long-f16 $M5 4000 ""
prof long-f16-c128 $M5 4000 "--attn-chunk 128"
prof long-f16-c32 $M5 4000 "--attn-chunk 32"
prof long-f16-full $M5 4000 "--fusion full"
prof short-15-q8 $M15 16 "--dtype q8_0"
for rep in 1 2; do
  dec steps-05-16 dist-m $M5 16 128 $rep ""
  dec steps-05-4000 dist-m $M5 4000 64 $rep ""
  dec full-05-4000 dist-m $M5 4000 64 $rep "--fusion full"
  dec steps-05-4000-c128 dist-m $M5 4000 64 $rep "--attn-chunk 128"
done
dec pers-05-4000 dist-m $M5 4000 64 1 "--decode persistent --decode-check 8"
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
