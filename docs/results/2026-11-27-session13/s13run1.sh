# Session 13 run 1: row products with x in registers (xreg_totals) against block_totals (WGFUSE_XREG=none), one binary.
source .baseline/s13/common.sh
R=$OUT/r1; mkdir -p $R
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { echo "$1 $2 p$3: $(env $1 $2 timeout 60 $D/wgfuse $G --parallel $3 2>&1 >/dev/null | grep -E '^parallel|rror' | cut -c1-190)"; }
for rep in 1 2; do for x in none all logits_rows gate_up_rows qkv_rope_rows,residual_rows; do par WGFUSE_XREG=$x WGFUSE_XREG_GROUPS=512 8; done; done | tee $R/parallel8.txt
for g in 132 264 396 1056 2048; do par WGFUSE_XREG=all WGFUSE_XREG_GROUPS=$g 8; done | tee $R/groups.txt
for p in 1 2 3 5 6 7; do par WGFUSE_XREG=none WGFUSE_XREG_GROUPS=512 $p; par WGFUSE_XREG=all WGFUSE_XREG_GROUPS=512 $p; done | tee $R/slots.txt
for x in none all; do WGFUSE_XREG=$x timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --warmup 8 --parallel 8 --profile=3 2>$R/b8-profile-$x.txt >/dev/null; done
timeout 60 $D/wgfuse $G --dtype q8_0 --parallel 8 2>&1 >/dev/null | grep -E '^parallel|rror' | tee $R/q8.txt
WGFUSE_XREG=none timeout 60 $D/wgfuse $G --dtype q8_0 --parallel 8 2>&1 >/dev/null | grep -E '^parallel|rror' | tee -a $R/q8.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
