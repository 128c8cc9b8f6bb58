# Session 13 run 5 (H100): xreg_totals variants (experiment build, environment overrides): x in registers or in
# workgroup memory (WGFUSE_XREG_SHARED), rows a block (WGFUSE_XREG_ROWS), workgroups (WGFUSE_XREG_GROUPS).
BUNDLE=bundle5.tgz source .baseline/s13/common.sh
R=$OUT/r5; mkdir -p $R
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { echo "$E: $(env $E timeout 90 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s|^parallel.*|rror.*' | tr '\n' ' ' | cut -c1-260)"; }
for rep in 1 2; do for sh in 0 1; do for rows in 4 2; do for g in 264 528; do E="WGFUSE_XREG_SHARED=$sh WGFUSE_XREG_ROWS=$rows WGFUSE_XREG_GROUPS=$g" par; done; done; done; done | tee $R/sweep.txt
for sh in 0 1; do for g in 264 528 792; do E="WGFUSE_XREG_SHARED=$sh WGFUSE_XREG_GROUPS=$g"; env $E timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile-s$sh-g$g.txt >/dev/null; echo "$E $(grep -E 'gate_up_rows|logits_rows|one pass' $R/b8-profile-s$sh-g$g.txt | tail -3 | tr -s ' ' | tr '\n' ' ')"; done; done | tee $R/profiles.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
