#!/usr/bin/env bash
# simteam final: run_sim.sh (stages 1-8) from the simteam branch's binary and scripts, then a few knobs.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_simteam; W=$H/wgfuse
cp $H/bl/run_sim.sh $H/bl/sim_cuda.cu bench/baselines/
S=$OUT/sim; K=$S/knobs; mkdir -p $K
WGFUSE=$W OUT=$S STAGES="1 2 3 4 5 6 7 8" BUDGET=350 HARD=440 bench/baselines/run_sim.sh > $S/run_sim.out 2>&1
tail -4 $S/run_sim.out
k() { local n=$1; shift; timeout 30 $W --adapter gpu sim "$@" --generations 30 --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print('team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median']),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),'ga',v['gpu_ga_ms'] and round(v['gpu_ga_ms']['median'],4),v.get('genome_read_of_copy')) for m,v in j['modes'].items()])" 2>/dev/null)"; }
{
for t in 4 2 8 4; do k market_team${t}_$SECONDS market --mode team --team $t; done
k market_whole_team4 market --mode team --team 4 --override MARKET_SPLIT=0
k market_fused market --mode fused
k rast_t32_wg1024 rastrigin --mode team --team 32 --workgroup 1024 --bandwidth
k rast_t32_L8000 rastrigin --mode team --team 32 --steps 8000 --bandwidth
k rast_t32_L8000_wg1024 rastrigin --mode team --team 32 --steps 8000 --workgroup 1024 --bandwidth
} 2>&1 | tee $K/summary.txt
grep -E "gen/s|vs |check|auto" $S/wgfuse_market.txt $S/wgfuse_rastrigin.txt $S/wgfuse_acrobot.txt | head -40
head -40 $S/report.md
cd $OUT && tar czf sim.tgz sim && rm -rf sim
