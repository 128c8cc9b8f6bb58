# Session 5, final call 2: the fused elementwise chain, wgfuse and the rewritten CUDA chain kernel, same machine.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
W=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/bench; mkdir -p $R
timeout 120 nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -v -o $R/dispatch_cuda bench/baselines/dispatch_cuda.cu > $R/nvcc.txt 2>&1; echo "nvcc rc=$?"
timeout 120 $R/dispatch_cuda --json $R/cuda.json > $R/cuda.txt 2>&1; echo "cuda rc=$?"; grep -A 12 "chain, 16777216" $R/cuda.txt
timeout 200 $W bench --kernels large --json $R/wgfuse_bench.json > $R/wgfuse_bench.txt 2>&1; echo "bench rc=$?"; grep -i -A 12 "chain" $R/wgfuse_bench.txt | head -30
timeout 60 $W --adapter gpu sim rastrigin --mode team --generations 16 --bandwidth --quiet --json $R/rastrigin_bandwidth.json > $R/rastrigin_bandwidth.txt 2>&1; echo "rastrigin rc=$?"; grep -E "evaluation reads|back to back|empty pass|read, 8|copy \(" $R/rastrigin_bandwidth.txt
rm -f $R/dispatch_cuda; cd $OUT && tar czf bench.tgz bench
