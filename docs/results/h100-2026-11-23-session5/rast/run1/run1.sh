#!/usr/bin/env bash
# rast run 1: same-size bounds, Rastrigin team/workgroup/unroll knobs (team > subgroup now allowed,
# lane-0-only reduction), Acrobot reformulation (base vs new, interleaved), CUDA Acrobot base vs new.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_rast; W=$H/wgfuse; B=$H/wgfuse_base
K=$OUT/k; mkdir -p $K
# CUDA builds in the background while wgfuse runs.
( timeout 200 nvcc -O3 -arch=sm_90 -o $K/cuda_new $H/sim_cuda.cu > $K/nvcc_new.txt 2>&1; echo "nvcc new rc=$?" >> $K/nvcc_new.txt ) &
( timeout 200 nvcc -O3 -arch=sm_90 -o $K/cuda_base $H/sim_cuda_base.cu > $K/nvcc_base.txt 2>&1; echo "nvcc base rc=$?" >> $K/nvcc_base.txt ) &
s() { python3 -c "import json;j=json.load(open('$K/$1.json'));print('team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median']),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),'ga',v['gpu_ga_ms'] and round(v['gpu_ga_ms']['median'],4),v.get('genome_read_of_copy')) for m,v in j['modes'].items()])" 2>/dev/null; }
k() { local n=$1 bin=$2; shift 2; timeout 45 $bin --adapter gpu sim "$@" --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(s $n)"; }
{
k r_t32_wg256_u16 $W rastrigin --mode team --team 32 --workgroup 256 --generations 30 --bandwidth
grep -A8 "one dispatch per timed pass" $K/r_t32_wg256_u16.txt
k r_base_t32_wg1024_u8 $B rastrigin --mode team --team 32 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t32_wg1024_u8 $W rastrigin --mode team --team 32 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t64_wg1024_u8 $W rastrigin --mode team --team 64 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t64_wg1024_u4 $W rastrigin --mode team --team 64 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=4
k r_t128_wg1024_u4 $W rastrigin --mode team --team 128 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=4
k r_t128_wg1024_u2 $W rastrigin --mode team --team 128 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=2
k r_t64_wg512_u8 $W rastrigin --mode team --team 64 --workgroup 512 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t64_wg256_u8 $W rastrigin --mode team --team 64 --workgroup 256 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t32_wg512_u8 $W rastrigin --mode team --team 32 --workgroup 512 --generations 30 --override TEAM_STEP_UNROLL=8
k r_t64_wg1024_u8_norob $W rastrigin --mode team --team 64 --workgroup 1024 --generations 30 --override TEAM_STEP_UNROLL=8 --unsafe-no-robustness
k r_t64_wg1024_u8_L8000 $W rastrigin --mode team --team 64 --workgroup 1024 --steps 8000 --generations 20 --override TEAM_STEP_UNROLL=8 --bandwidth
grep -A8 "one dispatch per timed pass" $K/r_t64_wg1024_u8_L8000.txt
k r_t64_wg1024_u8_L500 $W rastrigin --mode team --team 64 --workgroup 1024 --steps 500 --generations 30 --override TEAM_STEP_UNROLL=8 --bandwidth
grep -A8 "one dispatch per timed pass" $K/r_t64_wg1024_u8_L500.txt
timeout 45 $W --adapter gpu sim rastrigin --mode all --team 64 --workgroup 1024 --override TEAM_STEP_UNROLL=8 --generations 2 --check --quiet > $K/r_check.txt 2>&1; echo "rast check rc=$?"; grep -E "vs |check" $K/r_check.txt
for i in 1 2; do
  k a_base_team4_$i $B acrobot --mode team --team 4 --generations 40
  k a_new_team4_$i $W acrobot --mode team --team 4 --generations 40
done
k a_new_team4_norob $W acrobot --mode team --team 4 --generations 40 --unsafe-no-robustness
k a_base_team4_norob $B acrobot --mode team --team 4 --generations 40 --unsafe-no-robustness
timeout 60 $W --adapter gpu sim acrobot --mode all --team 4 --generations 3 --check --quiet --json $K/a_check.json > $K/a_check.txt 2>&1; echo "acro check rc=$?"; grep -E "vs |check" $K/a_check.txt
timeout 60 $B --adapter gpu sim acrobot --mode fused --generations 2 --check --quiet --json $K/a_check_base.json > $K/a_check_base.txt 2>&1; echo "acro base check rc=$?"
wait
cat $K/nvcc_new.txt $K/nvcc_base.txt | grep rc=
c() { local n=$1; shift; timeout 30 "$@" --generations 10 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print(j['label'],j['block'],j['check'],[(p['pop'],p['steps'],round(p['eval_ms']['median'],4),round(p['gen_per_s']['median'])) for p in j['points']])" 2>/dev/null)"; }
for i in 1 2; do
  c cuda_base_acro_team4_$i $K/cuda_base acrobot --variant team --math fast --sizes 4096x500 --check $K/a_check_base.json
  c cuda_new_acro_team4_$i $K/cuda_new acrobot --variant team --math fast --sizes 4096x500 --check $K/a_check.json
done
c cuda_new_rast_team64 $K/cuda_new rastrigin --variant team --lanes 64
} 2>&1 | tee $OUT/summary.txt
rm -f $K/cuda_new $K/cuda_base
cd $OUT && tar czf k.tgz k && rm -rf k
