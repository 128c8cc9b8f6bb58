#!/usr/bin/env bash
# ga run 3: the final build (GA of run 1, params copies before the evaluation, 8 generations per submit by default)
# against f28d2ad (+ timing), twice each; CUDA final defaults (2 in flight x 8 per submit) and 1 per submit.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_ga; K=$OUT/k; mkdir -p $K
(timeout 150 nvcc -O3 -arch=sm_90 -o $K/sim_cuda $H/sim_cuda.cu > $K/nvcc_new.txt 2>&1; echo "nvcc rc=$?" > $K/nvcc_new.rc) &
S='import json,sys
j=json.load(open(sys.argv[1]));m=list(j["modes"].values())[0]
r=lambda x:None if x is None else round(x["median"],4)
k=m.get("gpu_ga_kernel_ms");k=k and {n:r(v) for n,v in k.items()}
print(round(m["gen_per_s"]["median"]),"wall",round(1000/m["gen_per_s"]["median"],4),"eval",r(m["gpu_evaluation_ms"]),"ga",r(m["gpu_ga_ms"]),"betw_gen",r(m.get("gpu_between_generations_ms")),"betw_pass",r(m.get("gpu_between_passes_ms")),k or "")'
w() { local n=$1 bin=$2; shift 2; [ $SECONDS -gt 180 ] && { echo "$n skipped"; return; }; timeout 30 $H/$bin --adapter gpu sim "$@" --generations 48 --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "$S" $K/$n.json 2>&1 | tail -1)"; }
same() { python3 -c "
import json,sys
t=lambda f:list(json.load(open(f))['modes'].values())[0]
a=t(sys.argv[1]);print(sys.argv[1].split('/')[-1],'vs',' '.join(f.split('/')[-1] for f in sys.argv[2:]),'best',all(t(f)['best_fitness']==a['best_fitness'] for f in sys.argv[2:]),'mean',all(t(f)['mean_fitness']==a['mean_fitness'] for f in sys.argv[2:]))" "$@" 2>&1 | tail -1; }
declare -A A=([acrobot]="acrobot --mode team --team 4" [market]="market --mode team --team 4" [rastrigin]="rastrigin --mode team --team 32")
{
for wl in acrobot market rastrigin; do
  for r in a b; do
    w ${wl}_old_$r wgfuse_old ${A[$wl]}
    w ${wl}_final_$r wgfuse ${A[$wl]}
    w ${wl}_final_ps1_$r wgfuse ${A[$wl]} --per-submit 1
  done
  w ${wl}_final_k wgfuse ${A[$wl]} --time-ga-kernels
  same $K/${wl}_old_a.json $K/${wl}_old_b.json $K/${wl}_final_*.json
done
} 2>&1 | tee $OUT/summary.txt
timeout 30 $H/wgfuse --adapter gpu sim market --pop 64 --steps 1500 --generations 1 --mode fused --quiet --write-data $K/market.f32 > /dev/null 2>&1
wait; cat $K/nvcc_*.rc | tee -a $OUT/summary.txt
c() { local n=$1; shift; [ $SECONDS -gt 220 ] && { echo "$n skipped"; return; }; timeout 30 $K/sim_cuda "$@" --generations 48 --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));p=j['points'][0];g=p.get('ga_ms');b=p.get('between_generations_ms');print(round(p['gen_per_s']['median']),'wall',round(1000/p['gen_per_s']['median'],4),'eval',round(p['eval_ms']['median'],4),'ga',g and round(g['median'],4),'betw',b and round(b['median'],4))" 2>&1 | tail -1)"; }
declare -A C=([acrobot]="acrobot --variant team --lanes 4" [market]="market --variant team --lanes 4 --data $K/market.f32" [rastrigin]="rastrigin --variant team --lanes 64")
{
for wl in acrobot market rastrigin; do
  for r in a b; do
    c cuda_${wl}_final_$r ${C[$wl]}
    c cuda_${wl}_ps1_$r ${C[$wl]} --per-submit 1
  done
  python3 -c "
import json
t=lambda n:json.load(open('$K/cuda_${wl}_'+n+'.json'))['points'][0]['best_fitness']
print('cuda $wl final same best as per-submit 1:', t('final_a')==t('ps1_a')==t('final_b')==t('ps1_b'))" 2>&1 | tail -1
done
} 2>&1 | tee -a $OUT/summary.txt
rm -f $K/sim_cuda $K/market.f32
cd $OUT && tar czf k.tgz k && rm -rf k
