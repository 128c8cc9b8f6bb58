# Session 13 run 6 (H100): attend_rows' workgroup (experiment build: WGFUSE_ATTEND_WG, 64 = main's), 8 slots.
BUNDLE=bundle6.tgz source .baseline/s13/common.sh
R=$OUT/r6; mkdir -p $R
par() { echo "$E $1: $(env $E timeout 90 dist/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $1 -n $2 --temp 0 --warmup 16 --parallel 8 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s|^parallel.*|rror.*' | tr '\n' ' ' | cut -c1-260)"; }
for rep in 1 2; do for a in 64 128 256; do E=WGFUSE_ATTEND_WG=$a par $(seq -s, 1000 1015) 128; done; done | tee $R/short.txt
for a in 64 256; do E=WGFUSE_ATTEND_WG=$a par $(seq -s, 1000 2999) 64; done | tee $R/long.txt
for a in 64 256; do WGFUSE_ATTEND_WG=$a timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8 --profile=3 2>$R/b8-profile-a$a.txt >/dev/null; echo "$a: $(grep -E 'attend_rows|one pass' $R/b8-profile-a$a.txt | tail -2 | tr -s ' ' | tr '\n' ' ')"; done | tee $R/profiles.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
