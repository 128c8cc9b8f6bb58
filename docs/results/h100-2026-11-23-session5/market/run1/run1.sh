#!/usr/bin/env bash
# market run 1: vec4 records (new) vs main's binary (old): team 4 robust / no-robust, fused variants,
# team sizes and workgroups, the 65,536 row (team 2 vs 4, 65,000 vs 65,536), --check, CUDA float4.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_market; NEW=$H/wgfuse; OLD=dist/wgfuse-linux-x64/wgfuse
K=$OUT/k; mkdir -p $K
(timeout 170 nvcc -O3 -arch=sm_90 -Xptxas -v -o $K/sim_cuda_new $H/sim_cuda.cu > $K/cuda_build_new.txt 2>&1; echo "nvcc new rc=$?" >> $K/nvcc.txt) &
(timeout 170 nvcc -O3 -arch=sm_90 -o $K/sim_cuda_old bench/baselines/sim_cuda.cu > $K/cuda_build_old.txt 2>&1; echo "nvcc old rc=$?" >> $K/nvcc.txt) &
k() { local n=$1 b=$2 g=$3; shift 3; timeout 30 $b --adapter gpu sim market "$@" --generations $g --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print('pop',j.get('pop'),'team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median'],1),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null)"; }
{
k old_team4 $OLD 30 --mode team --team 4
k new_team4 $NEW 30 --mode team --team 4
k old_team4_norobust $OLD 30 --mode team --team 4 --unsafe-no-robustness
k new_team4_norobust $NEW 30 --mode team --team 4 --unsafe-no-robustness
k new_auto $NEW 30
k old_fused $OLD 20 --mode fused
k new_fused $NEW 20 --mode fused
k new_fused_split0 $NEW 20 --mode fused --override MARKET_SPLIT=0
k new_fused_nopf $NEW 20 --mode fused --override MARKET_PREFETCH=0
k new_fused_norobust $NEW 20 --mode fused --unsafe-no-robustness
k new_team2 $NEW 30 --mode team --team 2
k new_team8 $NEW 30 --mode team --team 8
k new_team4_wg32 $NEW 30 --mode team --team 4 --workgroup 32
k new_team4_wg128 $NEW 30 --mode team --team 4 --workgroup 128
for p in 32768 65000 65536; do for t in 2 4; do k new_p${p}_team$t $NEW 8 --pop $p --mode team --team $t; done; done
k old_p65536_team2 $OLD 8 --pop 65536 --mode team --team 2
k old_p65536_team4 $OLD 8 --pop 65536 --mode team --team 4
k new_p65536_team8 $NEW 8 --pop 65536 --mode team --team 8
k old_team4_b $OLD 30 --mode team --team 4
k new_team4_b $NEW 30 --mode team --team 4
} 2>&1 | tee $OUT/summary.txt
timeout 40 $NEW --adapter gpu sim market --mode all --team 4 --generations 3 --check --quiet --json $K/check_market.json > $K/check_market.txt 2>&1; echo "check market team4 rc=$?" | tee -a $OUT/summary.txt
grep -E " vs |check" $K/check_market.txt | tee -a $OUT/summary.txt
timeout 20 $NEW --adapter gpu sim market --pop 64 --steps 1500 --generations 1 --mode fused --quiet --write-data $K/market.f32 > /dev/null 2>&1
wait
cat $K/nvcc.txt | tee -a $OUT/summary.txt
grep -A3 "market_team_kernelILb1" $K/cuda_build_new.txt | grep -E "registers|spill" | tee -a $OUT/summary.txt
c() { local n=$1 b=$2; shift 2; timeout 30 $b market "$@" --data $K/market.f32 --generations 10 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print(j['label'],j['block'],j['check'],[(p['pop'],p['steps'],round(p['eval_ms']['median'],4),round(p['gen_per_s']['median'])) for p in j['points']])" 2>/dev/null)"; }
{
c cuda_new_team4 $K/sim_cuda_new --variant team --math fast --check $K/check_market.json --sizes 10000x1500,65536x1500
c cuda_old_team4 $K/sim_cuda_old --variant team --math fast --sizes 10000x1500,65536x1500
c cuda_new_thread $K/sim_cuda_new --variant thread --math fast --sizes 10000x1500
c cuda_new_team4_b $K/sim_cuda_new --variant team --math fast --sizes 10000x1500
c cuda_old_team4_b $K/sim_cuda_old --variant team --math fast --sizes 10000x1500
} 2>&1 | tee -a $OUT/summary.txt
rm -f $K/sim_cuda_new $K/sim_cuda_old $K/market.f32
cd $OUT && tar czf k.tgz k && rm -rf k
