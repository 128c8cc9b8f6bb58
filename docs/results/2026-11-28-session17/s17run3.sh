# Session 17 run 3 (H100): main 03de905 (dist-main) only: the prefill products' time at 512 tokens by tile,
# q8_0 / q4_k / f16 storage (is q8_0's slower gate/up a matter of the tile?), 0.5B and 1.5B.
BUNDLE=bundle2.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r3; mkdir -p $R
for q in f16 q8_0 q4_k; do for t in 128x128 64x128x1x2 64x128 64x64 32x64; do DT=$q D=dist-main/wgfuse-linux-x64 gate_up_us $M5 512 --prefill-tile $t | sed "s/^== /== $q /"; done; done 2>&1 | tee $R/tiles5.txt
M15=$(build 1.5b)
for q in f16 q8_0 q4_k; do for t in auto 64x128x1x2 64x128; do DT=$q D=dist-main/wgfuse-linux-x64 gate_up_us $M15 512 --prefill-tile $t | sed "s/^== /== $q /"; done; done 2>&1 | tee $R/tiles15.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
