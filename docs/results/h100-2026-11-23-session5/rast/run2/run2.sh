#!/usr/bin/env bash
# rast run 2: same-size bound incl. "right after a write"; Rastrigin defaults (auto: team 64, wg 1024,
# unroll 8) vs team 32; Acrobot base / run-1 (dsdt) / new (dsdt + MLP tree) interleaved; checks of
# the MLP workloads; CUDA Acrobot base vs new formulas (same session).
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_rast; W=$H/wgfuse; B=$H/wgfuse_base; R=$H/wgfuse_r1
K=$OUT/k; mkdir -p $K
exec > >(tee $OUT/summary.txt) 2>&1
timeout 200 nvcc -O3 -arch=sm_90 -o $K/cuda_new $H/sim_cuda.cu > $K/nvcc_new.txt 2>&1 &
P1=$!
timeout 200 nvcc -O3 -arch=sm_90 -o $K/cuda_base $H/sim_cuda_base.cu > $K/nvcc_base.txt 2>&1 &
P2=$!
s() { python3 -c "import json;j=json.load(open('$K/$1.json'));print('team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median']),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),'ga',v['gpu_ga_ms'] and round(v['gpu_ga_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null; }
k() { local n=$1 bin=$2; shift 2; timeout 45 $bin --adapter gpu sim "$@" --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(s $n)"; }
c() { local n=$1; shift; timeout 30 "$@" --generations 10 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print(j['label'],j['block'],j['check'],[(p['pop'],p['steps'],round(p['eval_ms']['median'],4),round(p['gen_per_s']['median'])) for p in j['points']])" 2>/dev/null)"; }
k r_auto $W rastrigin --generations 30 --bandwidth
grep -E "auto|^  one|^  of|^    " $K/r_auto.txt | grep -v "best fitness" | head -12
k r_t32 $W rastrigin --mode team --team 32 --generations 30
k r_auto2 $W rastrigin --generations 30
k r_t32_2 $W rastrigin --mode team --team 32 --generations 30
timeout 45 $W --adapter gpu sim rastrigin --mode all --generations 2 --check --quiet > $K/r_check.txt 2>&1; echo "rast check rc=$?"; grep -E "team vs|team +vs CPU" $K/r_check.txt
for i in 1 2; do
  k a_base_$i $B acrobot --mode team --team 4 --generations 40
  k a_r1_$i $R acrobot --mode team --team 4 --generations 40
  k a_new_$i $W acrobot --mode team --team 4 --generations 40
done
k a_new_team2 $W acrobot --mode team --team 2 --generations 40
k a_new_team8 $W acrobot --mode team --team 8 --generations 40
k a_new_fused $W acrobot --mode fused --generations 20
k a_base_fused $B acrobot --mode fused --generations 20
k a_new_auto $W acrobot --generations 40
for w in acrobot cartpole mountaincar; do
  timeout 60 $W --adapter gpu sim $w --mode all --team 4 --generations 3 --check --quiet --json $K/check_$w.json > $K/check_$w.txt 2>&1; echo "check $w rc=$?"; grep -E "team vs|fused vs perstep|team +vs CPU" $K/check_$w.txt
done
timeout 60 $W --adapter gpu sim acrobot --mode team --team 8 --generations 2 --check --quiet > $K/check_acro8.txt 2>&1; echo "check acrobot team8 rc=$?"
timeout 60 $B --adapter gpu sim acrobot --mode fused --generations 2 --check --quiet --json $K/check_base.json > /dev/null 2>&1
wait $P1; echo "nvcc new rc=$?"; wait $P2; echo "nvcc base rc=$?"
for i in 1 2; do
  c cuda_base_acro_$i $K/cuda_base acrobot --variant team --math fast --sizes 4096x500 --check $K/check_base.json
  c cuda_new_acro_$i $K/cuda_new acrobot --variant team --math fast --sizes 4096x500 --check $K/check_acrobot.json
done
c cuda_new_rast_team64 $K/cuda_new rastrigin --variant team --lanes 64
rm -f $K/cuda_new $K/cuda_base
cd $OUT && tar czf k.tgz k && rm -rf k
