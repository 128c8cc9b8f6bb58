# Session 17 run 6 (H100): where q8_0's gate/up gains from the 128 x 128 tile: forced 128 x 128 against
# 64 x 128 (4 x 8 a thread) at 1,120-2,432 workgroups (0.5B at 2,048 and 3,000 tokens, 1.5B at 1,024 and 2,048).
BUNDLE=bundle5.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r6; mkdir -p $R
for n in 2048 3000; do for t in 128x128 64x128; do DT=q8_0 gate_up_us $M5 $n --prefill-tile $t; done; done 2>&1 | tee $R/q8_tiles5.txt
M15=$(build 1.5b)
for n in 1024 2048; do for t in 128x128 64x128; do DT=q8_0 gate_up_us $M15 $n --prefill-tile $t; done; done 2>&1 | tee $R/q8_tiles15.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
