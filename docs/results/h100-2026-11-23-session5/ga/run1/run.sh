#!/usr/bin/env bash
# ga run: GA per kernel, GPU gaps, in-flight 1-4, old (f28d2ad + timing) vs new GA; CUDA old vs new GA/driver.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_ga; K=$OUT/k; mkdir -p $K
(timeout 150 nvcc -O3 -arch=sm_90 -o $K/sim_cuda $H/sim_cuda.cu > $K/nvcc_new.txt 2>&1; echo "nvcc new rc=$?" > $K/nvcc_new.rc) &
(timeout 150 nvcc -O3 -arch=sm_90 -o $K/sim_cuda_old $H/sim_cuda_old.cu > $K/nvcc_old.txt 2>&1; echo "nvcc old rc=$?" > $K/nvcc_old.rc) &
S='import json,sys
j=json.load(open(sys.argv[1]));m=list(j["modes"].values())[0]
r=lambda x:None if x is None else round(x["median"],4)
k=m.get("gpu_ga_kernel_ms");k=k and {n:r(v) for n,v in k.items()}
print(round(m["gen_per_s"]["median"]),"wall",round(1000/m["gen_per_s"]["median"],4),"eval",r(m["gpu_evaluation_ms"]),"ga",r(m["gpu_ga_ms"]),"betw_gen",r(m.get("gpu_between_generations_ms")),"betw_pass",r(m.get("gpu_between_passes_ms")),k or "")'
w() { local n=$1 bin=$2; shift 2; [ $SECONDS -gt 190 ] && { echo "$n skipped"; return; }; timeout 30 $H/$bin --adapter gpu sim "$@" --generations 40 --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "$S" $K/$n.json 2>&1 | tail -1)"; }
declare -A A=([acrobot]="acrobot --mode team --team 4" [market]="market --mode team --team 4" [rastrigin]="rastrigin --mode team --team 32")
{
for wl in acrobot market rastrigin; do
  for b in wgfuse_old wgfuse; do
    w ${wl}_${b}_k $b ${A[$wl]} --time-ga-kernels
    for f in 1 2 3 4; do
      [ $b = wgfuse_old ] && [ $f -gt 2 ] && continue
      w ${wl}_${b}_if$f $b ${A[$wl]} --in-flight $f
    done
  done
  python3 -c "
import json
a=json.load(open('$K/${wl}_wgfuse_old_if2.json'))['modes'];b=json.load(open('$K/${wl}_wgfuse_if2.json'))['modes']
a=list(a.values())[0];b=list(b.values())[0]
print('$wl old vs new: best', a['best_fitness']==b['best_fitness'], 'mean', a['mean_fitness']==b['mean_fitness'], b['best_fitness'][-1])" 2>&1 | tail -1
done
} 2>&1 | tee $OUT/summary.txt
timeout 30 $H/wgfuse --adapter gpu sim market --pop 64 --steps 1500 --generations 1 --mode fused --quiet --write-data $K/market.f32 > /dev/null 2>&1
wait; cat $K/nvcc_*.rc | tee -a $OUT/summary.txt
c() { local n=$1 bin=$2; shift 2; [ $SECONDS -gt 215 ] && { echo "$n skipped"; return; }; timeout 30 $K/$bin "$@" --generations 40 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));p=j['points'][0];g=p.get('ga_ms');b=p.get('between_generations_ms');print(round(p['gen_per_s']['median']),'wall',round(1000/p['gen_per_s']['median'],4),'eval',round(p['eval_ms']['median'],4),'ga',g and round(g['median'],4),'betw',b and round(b['median'],4))" 2>&1 | tail -1)"; }
declare -A C=([acrobot]="acrobot --variant team --lanes 4" [market]="market --variant team --lanes 4 --data $K/market.f32" [rastrigin]="rastrigin --variant team --lanes 64")
{
for wl in acrobot market rastrigin; do
  c cuda_${wl}_old sim_cuda_old ${C[$wl]}
  for f in 1 2 3; do c cuda_${wl}_if$f sim_cuda ${C[$wl]} --in-flight $f; done
  python3 -c "
import json
a=json.load(open('$K/cuda_${wl}_old.json'))['points'][0];b=json.load(open('$K/cuda_${wl}_if2.json'))['points'][0]
print('cuda $wl old vs new best', a['best_fitness']==b['best_fitness'])" 2>&1 | tail -1
done
} 2>&1 | tee -a $OUT/summary.txt
rm -f $K/sim_cuda $K/sim_cuda_old $K/market.f32
cd $OUT && tar czf k.tgz k && rm -rf k
