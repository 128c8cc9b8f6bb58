#!/usr/bin/env bash
# simteam run 1: Market split team sizes, Rastrigin unroll/workgroup, CUDA Rastrigin slices.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_simteam; W=$H/wgfuse
K=$OUT/k; mkdir -p $K
k() { local n=$1; shift; timeout 40 $W --adapter gpu sim "$@" --generations 30 --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print('team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median']),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),v.get('genome_read_of_copy')) for m,v in j['modes'].items()])" 2>/dev/null)"; }
{
for t in 2 4 8; do k market_split_team$t market --mode team --team $t; done
for t in 2 4; do k market_whole_team$t market --mode team --team $t --override MARKET_SPLIT=0; done
k market_split_team4_norobust market --mode team --team 4 --unsafe-no-robustness
k market_split_team4_nopf market --mode team --team 4 --override MARKET_PREFETCH=0
k market_fused market --mode fused
k market_auto market
k acrobot_team4 acrobot --mode team --team 4
for u in 4 16; do k rast_t32_u$u rastrigin --mode team --team 32 --bandwidth --override TEAM_STEP_UNROLL=$u; done
for wg in 512 1024; do k rast_t32_u16_wg$wg rastrigin --mode team --team 32 --workgroup $wg --bandwidth; done
k rast_t32_u8_wg1024 rastrigin --mode team --team 32 --workgroup 1024 --bandwidth --override TEAM_STEP_UNROLL=8
k rast_t16_u16 rastrigin --mode team --team 16 --bandwidth
k rast_t16_u16_wg1024 rastrigin --mode team --team 16 --workgroup 1024 --bandwidth
} 2>&1 | tee $OUT/summary.txt
# --check at the defaults for market (team 4 split vs per-step and the reference) and rastrigin.
timeout 60 $W --adapter gpu sim market --mode all --team 4 --generations 3 --check --quiet --json $K/check_market.json > $K/check_market.txt 2>&1; echo "check market rc=$?" | tee -a $OUT/summary.txt
grep -E "vs|check" $K/check_market.txt | tee -a $OUT/summary.txt
timeout 60 $W --adapter gpu sim market --mode all --team 2 --generations 3 --check --quiet > $K/check_market2.txt 2>&1; echo "check market2 rc=$?" | tee -a $OUT/summary.txt
grep -E "vs|check" $K/check_market2.txt | tee -a $OUT/summary.txt
# CUDA: the new Rastrigin team kernel (slices per 4 individuals), thread, and the market/acrobot teams for scale.
timeout 120 nvcc -O3 -arch=sm_90 -Xptxas -v -o $OUT/sim_cuda $H/sim_cuda.cu > $K/cuda_build.txt 2>&1; echo "nvcc rc=$?" | tee -a $OUT/summary.txt
timeout 30 $W --adapter gpu sim rastrigin --mode fused --generations 2 --check --quiet --json $K/wg_rast.json > /dev/null 2>&1
timeout 30 $W --adapter gpu sim market --pop 64 --steps 1500 --generations 1 --mode fused --quiet --write-data $K/market.f32 > /dev/null 2>&1
c() { local n=$1; shift; timeout 30 $OUT/sim_cuda "$@" --generations 10 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print(j['label'],j['block'],j['check'],[(p['pop'],p['steps'],round(p['eval_ms']['median'],4),round(p['gen_per_s']['median'])) for p in j['points']])" 2>/dev/null)"; }
{
for s in 8 16 32 64; do c cuda_rast_s$s rastrigin --variant team --lanes $s --check $K/wg_rast.json; done
c cuda_rast_thread rastrigin --variant thread
c cuda_market_team4 market --variant team --data $K/market.f32
} 2>&1 | tee -a $OUT/summary.txt
cd $OUT && tar czf k.tgz k && rm -rf k
