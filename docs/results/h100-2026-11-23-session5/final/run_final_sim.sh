# Session 5, final call 1: the "one run of run_sim.sh with everything in it", merged tree.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
export WGFUSE=$PWD/dist/wgfuse-linux-x64/wgfuse
OUT=$OUT/sim BUDGET=${BUDGET:-430} HARD=${HARD:-540} bench/baselines/run_sim.sh > /dev/null 2>&1; echo "run_sim rc=$?"
tail -3 $OUT/sim/run_sim.log; grep -c SKIPPED $OUT/sim/run_sim.log
sed -n '/Default sizes/,/Hand-written/p' $OUT/sim/report.md | head -40
cd $OUT && tar czf sim.tgz sim && rm -rf sim
