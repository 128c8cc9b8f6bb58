# Session 13 run 9 (H100): xreg_totals' prefetch depth (experiment build): WGFUSE_XREG_AHEAD=1 (one block ahead, decoded:
# main e2abd22), 2 (two blocks ahead, decoded), 3 (two ahead, packed f16/bf16 words); WGFUSE_XREG_GROUPS.
BUNDLE=bundle9.tgz source .baseline/s13/common.sh
R=$OUT/r9; mkdir -p $R
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { echo "$E $*: $(env $E timeout 90 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 "$@" 2>&1 >/dev/null | grep -oE '^parallel.*|rror.*' | cut -c1-200)"; }
for rep in 1 2; do for a in 1 2 3; do for g in 264 396; do E="WGFUSE_XREG_AHEAD=$a WGFUSE_XREG_GROUPS=$g" par; done; done; done | tee $R/sweep.txt
for a in 1 2 3; do E="WGFUSE_XREG_AHEAD=$a" par --dtype q8_0; done | tee $R/q8.txt
for a in 1 2 3; do WGFUSE_XREG_AHEAD=$a timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile-a$a.txt >/dev/null; echo "$a: $(grep -E 'gate_up_rows|logits_rows|one pass' $R/b8-profile-a$a.txt | tail -3 | tr -s ' ' | tr '\n' ' ')"; done | tee $R/profiles.txt
cd $OUT && tar czf r9.tgz r9 && rm -rf r9
