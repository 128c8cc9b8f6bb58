#!/usr/bin/env bash
# market run 3 (commit 9fb76eb): prefetch off in teams by default; team sizes and auto over the
# population sweep; robust and not; fused; --check; CUDA team4 with and without its prefetch.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_market; NEW=$H/wgfuse; OLD=dist/wgfuse-linux-x64/wgfuse
K=$OUT/k; mkdir -p $K
(timeout 120 nvcc -O3 -arch=sm_90 -Xptxas -v -o $K/cuda_pf $H/sim_cuda.cu > $K/cuda_build.txt 2>&1; echo "nvcc pf rc=$?" >> $K/nvcc.txt) &
(timeout 120 nvcc -O3 -arch=sm_90 -Xptxas -v -o $K/cuda_nopf $H/sim_cuda_nopf.cu > $K/cuda_build_nopf.txt 2>&1; echo "nvcc nopf rc=$?" >> $K/nvcc.txt) &
k() { local n=$1 b=$2 g=$3; shift 3; timeout 30 $b --adapter gpu sim market "$@" --generations $g --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print('pop',j.get('pop'),'team',j['team'],[(m,round(v['gen_per_s']['median'],1),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),'ga',v['gpu_ga_ms'] and round(v['gpu_ga_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null)"; }
{
k old_team4 $OLD 30 --mode team --team 4
k auto $NEW 30
k t4_nr $NEW 30 --mode team --team 4 --unsafe-no-robustness
k t2 $NEW 30 --mode team --team 2
k t8 $NEW 30 --mode team --team 8
k t4_pf $NEW 30 --mode team --team 4 --override MARKET_PREFETCH=1
k fused $NEW 20 --mode fused
for p in 512 2048 32768 65536; do k auto_p$p $NEW 10 --pop $p; done
for p in 512 2048; do k t4_p$p $NEW 10 --pop $p --mode team --team 4; done
k t2_p32768 $NEW 10 --pop 32768 --mode team --team 2
k t2_p65536 $NEW 8 --pop 65536 --mode team --team 2
k auto_L5000 $NEW 10 --steps 5000
k auto_b $NEW 30
k auto_c $NEW 30
} 2>&1 | tee $OUT/summary.txt
timeout 40 $NEW --adapter gpu sim market --mode all --generations 3 --check --quiet --json $K/check_market.json > $K/check.txt 2>&1; echo "check market auto rc=$?" | tee -a $OUT/summary.txt
grep -E "vs perstep|check passed|error|team of" $K/check.txt | tee -a $OUT/summary.txt
timeout 20 $NEW --adapter gpu sim market --pop 64 --steps 1500 --generations 1 --mode fused --quiet --write-data $K/market.f32 > /dev/null 2>&1
wait; cat $K/nvcc.txt | tee -a $OUT/summary.txt
grep -A3 "market_team_kernelILb1" $K/cuda_build_nopf.txt | grep -E "registers" | tee -a $OUT/summary.txt
c() { local n=$1 b=$2; shift 2; timeout 30 $b market "$@" --data $K/market.f32 --generations 10 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print(j['label'],j['block'],j['check'],[(p['pop'],p['steps'],round(p['eval_ms']['median'],4),round(p['gen_per_s']['median'])) for p in j['points']])" 2>/dev/null)"; }
{
c cuda_pf $K/cuda_pf --variant team --math fast --check $K/check_market.json --sizes 10000x1500,65536x1500
c cuda_nopf $K/cuda_nopf --variant team --math fast --check $K/check_market.json --sizes 10000x1500,65536x1500
c cuda_pf_b $K/cuda_pf --variant team --math fast --sizes 10000x1500
c cuda_nopf_b $K/cuda_nopf --variant team --math fast --sizes 10000x1500
} 2>&1 | tee -a $OUT/summary.txt
rm -f $K/cuda_pf $K/cuda_nopf $K/market.f32
cd $OUT && tar czf k.tgz k && rm -rf k
