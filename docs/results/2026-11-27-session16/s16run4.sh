# Session 16 run 4 (H100): quantized decode without integer-to-float conversions (branch quad, third try: the
# per-group path with the quants made floats by their bits). Kernel bench at 1.5B; profiles and decode A/B
# against main 521ea45 at 0.5B and 1.5B (f16, q8_0, q4_k).
BUNDLE=bundle4.tgz source .baseline/s16/common.sh
R=$OUT/r4; mkdir -p $R
source .baseline/s16/fns.sh
for d in q8_0 q4_k; do for k in gate_up_silu down_proj; do
  timeout 100 $D/wgfuse_kernel_bench --model 1.5B --dtype $d --kind $k --passes 2 > $R/kb-$d-$k.txt 2>&1
done; done
for f in $R/kb-*.txt; do echo "== $f"; grep -E "^1.5B" $f | sort -k9 -g | head -2; grep " rule " $f; done
M15=$(build 1.5b)
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for d in q8_0 q4_k; do for side in dist dist-main; do
  timeout 120 $side/wgfuse-linux-x64/wgfuse generate -m $M15 $G --dtype $d --profile=3 2>$R/prof-15-$d-$side.txt >/dev/null
  echo "$d $side"; grep -E "^(qkv|o_proj|gate|down|lm_head|one pass)" $R/prof-15-$d-$side.txt
done; done
OUT=$R A=dist-main/wgfuse-linux-x64/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="1.5b=$M15 0.5b=$M5" \
  A_DTYPES=q8_0,q4_k B_DTYPES=q8_0,q4_k REPS=3 bench/baselines/ab_decode.sh > $R/ab.log 2>&1
cat $R/ab.md
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
