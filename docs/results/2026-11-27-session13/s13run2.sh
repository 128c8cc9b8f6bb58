# Session 13 run 2: xreg_totals with the butterfly written out (literal trip counts), with and without prefetch of the next block.
BUNDLE=bundle2.tgz source .baseline/s13/common.sh
R=$OUT/r2; mkdir -p $R
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { echo "$*: $(env "$@" timeout 60 $D/wgfuse $G --parallel $P 2>&1 >/dev/null | grep -E '^parallel|rror' | cut -c1-190)"; }
P=8
for rep in 1 2; do par WGFUSE_XREG=none; par WGFUSE_XREG=all; par WGFUSE_XREG=all WGFUSE_XREG_PREFETCH=1; par WGFUSE_XREG=logits_rows; par WGFUSE_XREG=logits_rows,gate_up_rows; done | tee $R/parallel8.txt
for g in 264 1056 2048; do par WGFUSE_XREG=all WGFUSE_XREG_GROUPS=$g; par WGFUSE_XREG=all WGFUSE_XREG_GROUPS=$g WGFUSE_XREG_PREFETCH=1; done | tee $R/groups.txt
for x in none all; do WGFUSE_XREG=$x timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --warmup 8 --parallel 8 --profile=3 2>$R/b8-profile-$x.txt >/dev/null; done
WGFUSE_XREG=all WGFUSE_XREG_PREFETCH=1 timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --warmup 8 --parallel 8 --profile=3 2>$R/b8-profile-pf.txt >/dev/null
grep -A12 "^kernel" $R/b8-profile-*.txt | grep -E "profile|rows|one pass" | tail -30
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
