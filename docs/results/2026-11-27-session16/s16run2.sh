# Session 16 run 2 (H100): quantized rows read by quads (branch quad) against main 521ea45: decode A/B at
# 0.5B and 1.5B in f16, q8_0, q4_k; per-kernel profiles of both at 1.5B; the kernel bench's sweep (quad build).
BUNDLE=bundle2.tgz source .baseline/s16/common.sh
R=$OUT/r2; mkdir -p $R
source .baseline/s16/fns.sh
M15=$(build 1.5b)
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for d in q8_0 q4_k; do
  for side in dist dist-main; do
    timeout 120 $side/wgfuse-linux-x64/wgfuse generate -m $M15 $G --dtype $d --profile=3 2>$R/prof-15-$d-$side.txt >/dev/null
  done
done
grep -E "^(qkv|o_proj|gate|down|lm_head|one pass)" $R/prof-15-*.txt
OUT=$R A=dist-main/wgfuse-linux-x64/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=$M5 1.5b=$M15" \
  A_DTYPES=f16,q8_0,q4_k B_DTYPES=f16,q8_0,q4_k REPS=3 bench/baselines/ab_decode.sh > $R/ab.log 2>&1
cat $R/ab.md
for d in q8_0 q4_k; do timeout 200 $D/wgfuse_kernel_bench --model 1.5B --dtype $d --passes 3 > $R/kb-15-$d.txt 2>&1; done
grep -E " rule " $R/kb-15-*.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
