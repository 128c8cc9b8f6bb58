# Session 5, final call 3: run_sim again with every slot warmed and 32 generations, then Rastrigin's bandwidth.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
export WGFUSE=$PWD/dist/wgfuse-linux-x64/wgfuse
OUT=$OUT/sim BUDGET=420 HARD=520 bench/baselines/run_sim.sh > /dev/null 2>&1; echo "run_sim rc=$?"
tail -2 $OUT/sim/run_sim.log; grep -c SKIPPED $OUT/sim/run_sim.log
sed -n '/Default sizes/,/Hand-written/p' $OUT/sim/report.md | head -24
R=$OUT/sim/bandwidth; mkdir -p $R
timeout 40 $WGFUSE --adapter gpu sim rastrigin --mode team --generations 32 --bandwidth --quiet --json $R/rastrigin.json > $R/rastrigin.txt 2>&1; echo "rastrigin rc=$?"; grep -E "evaluation reads|back to back|empty pass|read, 8|copy \(" $R/rastrigin.txt
cd $OUT && tar czf sim2.tgz sim && rm -rf sim
