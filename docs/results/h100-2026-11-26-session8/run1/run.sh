# session 8 run 1: grid barrier vs dispatch boundary, WGSL (Dawn/Vulkan) and CUDA, same H100
. .baseline/setup_dev.sh
W=dist/wgfuse-linux-x64/wgfuse
mkdir -p $OUT/r1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/r1/gpu.txt
(NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc); $NVCC -O3 -std=c++17 -arch=sm_90 -o /tmp/barrier_cuda bench/baselines/barrier_cuda.cu) > $OUT/r1/nvcc.log 2>&1; echo nvcc rc=$?
$W bench --suite barrier --json $OUT/r1/barrier_wgsl.json > $OUT/r1/barrier_wgsl.txt 2> $OUT/r1/barrier_wgsl.log; echo wgsl rc=$?
/tmp/barrier_cuda --json $OUT/r1/barrier_cuda.json > $OUT/r1/barrier_cuda.txt 2>&1; echo cuda rc=$?
$W bench --suite barrier --workgroups 132 --barriers 64 --reps 3 > $OUT/r1/wg256_again.txt 2>&1
$W -v bench --suite barrier --workgroups 132 --barriers 2 --reps 1 --dump-shaders > $OUT/r1/dump.txt 2>&1
cat $OUT/r1/barrier_wgsl.txt $OUT/r1/barrier_cuda.txt; tail -3 $OUT/r1/barrier_wgsl.log $OUT/r1/nvcc.log
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
