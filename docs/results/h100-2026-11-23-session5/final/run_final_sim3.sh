# Session 5, final call 5: run_sim.sh with every stage in one call (the fixed script), then Rastrigin's bandwidth.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
export WGFUSE=$PWD/dist/wgfuse-linux-x64/wgfuse
OUT=$OUT/sim BUDGET=430 HARD=530 bench/baselines/run_sim.sh > /dev/null 2>&1; echo "run_sim rc=$?"
tail -2 $OUT/sim/run_sim.log; grep "exit [1-9]" $OUT/sim/run_sim.log | head -5
sed -n '/Targets (Market/,/Hand-written/p' $OUT/sim/report.md | head -12
R=$OUT/sim/bandwidth; mkdir -p $R
timeout 40 $WGFUSE --adapter gpu sim rastrigin --mode team --generations 32 --bandwidth --quiet --json $R/rastrigin.json > $R/rastrigin.txt 2>&1; echo "rastrigin rc=$?"; grep -E "evaluation reads|back to back|empty pass|read, 8|copy \(" $R/rastrigin.txt
rm -f $OUT/sim/sim_cuda; cd $OUT && tar czf sim3.tgz sim && rm -rf sim
