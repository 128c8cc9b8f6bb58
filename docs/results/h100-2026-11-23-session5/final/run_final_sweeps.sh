# Session 5, final call 4: stage 5 (the wgfuse sweeps) alone; call 3 lost it to a missing mkdir in run_sim.sh.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
export WGFUSE=$PWD/dist/wgfuse-linux-x64/wgfuse
OUT=$OUT/s5 STAGES=5 BUDGET=400 HARD=500 bench/baselines/run_sim.sh > /dev/null 2>&1; echo "run_sim rc=$?"
grep -c "exit 0" $OUT/s5/run_sim.log; grep "exit [1-9]" $OUT/s5/run_sim.log | head
cd $OUT && tar czf s5.tgz s5 && rm -rf s5
