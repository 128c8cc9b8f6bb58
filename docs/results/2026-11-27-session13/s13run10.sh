# Session 13 run 10 (H100): the LM head's xreg_totals workgroups (experiment build: WGFUSE_XREG_HEAD_GROUPS; unset = 264, main 3b2033c).
BUNDLE=bundle10.tgz source .baseline/s13/common.sh
R=$OUT/r10; mkdir -p $R
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { echo "$E $*: $(env $E timeout 90 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 "$@" 2>&1 >/dev/null | grep -oE '^parallel.*|rror.*' | cut -c1-200)"; }
for rep in 1 2 3; do for g in 264 528 792; do E="WGFUSE_XREG_HEAD_GROUPS=$g" par; done; done | tee $R/sweep.txt
for g in 264 528 792; do WGFUSE_XREG_HEAD_GROUPS=$g timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile-g$g.txt >/dev/null; echo "$g: $(grep -E 'logits_rows|one pass' $R/b8-profile-g$g.txt | tail -2 | tr -s ' ' | tr '\n' ' ')"; done | tee $R/profiles.txt
for g in 264 528; do E="WGFUSE_XREG_HEAD_GROUPS=$g" par --dtype q8_0; done | tee $R/q8.txt
cd $OUT && tar czf r10.tgz r10 && rm -rf r10
