# Session 16 run 1 (H100): what the decode kernels cost with their weights already in L2 (experiment build
# exp-l2: WGFUSE_PROFILE_WARM=1 runs each profiled dispatch once untimed, in its own pass, just before its timed pass).
BUNDLE=bundle1.tgz source .baseline/s16/common.sh
R=$OUT/r1; mkdir -p $R
source .baseline/s16/fns.sh
G="--prompt-ids $(ids 16) -n 128 --temp 0 --dtype f16 --warmup 16"
for i in 1 2; do
  timeout 90 $D/wgfuse generate -m $M5 $G --profile=5 2>$R/cold$i.txt >/dev/null
  WGFUSE_PROFILE_WARM=1 timeout 90 $D/wgfuse generate -m $M5 $G --profile=5 2>$R/warm$i.txt >/dev/null
done
M15=$(build 1.5b)
timeout 90 $D/wgfuse generate -m $M15 $G --profile=5 2>$R/cold15.txt >/dev/null
WGFUSE_PROFILE_WARM=1 timeout 90 $D/wgfuse generate -m $M15 $G --profile=5 2>$R/warm15.txt >/dev/null
tail -25 $R/cold1.txt; tail -25 $R/warm1.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
