# Session 12 run 8 (experiment build, not landed): row-product shapes swept at 16 slots (a short prefill pass,
# --profile-prefill of a 16-token prompt) and 8 slots (generate --parallel 8 --profile), every product kind
# given the same (team, rows per team, slot groups) through WGFUSE_ROW_SHAPE_<KIND>; "rule" = the shipped rule.
source .baseline/s12/common.sh
mkdir -p $OUT/r8; R=$OUT/r8
P16=$(seq -s, 1000 1015)
for t in rule 32,1,1 32,1,2 32,1,4 32,2,1 32,2,2 32,2,4 32,2,8 32,4,1 32,4,2 32,4,4 32,4,8 32,8,2 32,8,4 32,8,8 64,1,1 64,1,2 64,2,1 64,2,2 64,2,4 64,4,1 64,4,2 64,4,4 128,1,1 128,2,1 128,2,2 128,4,1 128,4,2; do
  if [ $t = rule ]; then E=(); else E=(WGFUSE_ROW_SHAPE_QKV=$t WGFUSE_ROW_SHAPE_O=$t WGFUSE_ROW_SHAPE_GATE_UP=$t WGFUSE_ROW_SHAPE_DOWN=$t WGFUSE_ROW_SHAPE_LM=$t); fi
  echo "=== $t prefill16"; env "${E[@]}" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $P16 -n 2 --temp 0 --warmup 1 --profile-prefill=3 2>$R/p16-$t.txt >/dev/null; sed -n '/^prefill chunk of/,$p' $R/p16-$t.txt | grep -E "one pass|rror"; grep -i error $R/p16-$t.txt | head -2
  echo "=== $t parallel8"; env "${E[@]}" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $P16 -n 64 --temp 0 --warmup 8 --parallel 8 --profile=3 2>$R/b8-$t.txt >/dev/null; grep -E "^parallel|one pass" $R/b8-$t.txt | tail -2; grep -i error $R/b8-$t.txt | head -2
done 2>&1 | tee $R/sweep.txt | cut -c1-160
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
