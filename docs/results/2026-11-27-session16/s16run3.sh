# Session 16 run 3 (H100): the quad path without private arrays indexed in loops (branch quad, second try).
# Kernel bench at 1.5B (gate/up, down) with quads and with WGFUSE_NO_QUAD=1 (the per-group path, same build);
# 1.5B q8_0 decode and profile against main 521ea45.
BUNDLE=bundle3.tgz source .baseline/s16/common.sh
R=$OUT/r3; mkdir -p $R
source .baseline/s16/fns.sh
for d in q8_0 q4_k; do for k in gate_up_silu down_proj; do
  timeout 100 $D/wgfuse_kernel_bench --model 1.5B --dtype $d --kind $k --passes 2 > $R/kb-$d-$k-quad.txt 2>&1
  WGFUSE_NO_QUAD=1 timeout 100 $D/wgfuse_kernel_bench --model 1.5B --dtype $d --kind $k --passes 2 > $R/kb-$d-$k-group.txt 2>&1
done; done
for f in $R/kb-*.txt; do echo "== $f"; grep -E "^1.5B" $f | sort -k9 -g | head -3; done
M15=$(build 1.5b)
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for side in dist dist-main; do
  timeout 120 $side/wgfuse-linux-x64/wgfuse generate -m $M15 $G --dtype q8_0 --profile=3 2>$R/prof-15-q8_0-$side.txt >/dev/null
  grep -E "^\[|^(gate|down|lm_head|one pass)" $R/prof-15-q8_0-$side.txt
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
