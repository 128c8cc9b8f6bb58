#!/usr/bin/env bash
# rast run 3: Acrobot MLP tree with constant-count loops vs the broadcast MLP (run-1 binary), both
# with the dsdt reformulation; checks of the MLP workloads at teams 4 and 8; Rastrigin unroll.
set -u
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_rast; W=$H/wgfuse; R=$H/wgfuse_r1
K=$OUT/k; mkdir -p $K
exec > >(tee $OUT/summary.txt) 2>&1
s() { python3 -c "import json;j=json.load(open('$K/$1.json'));print('team',j['team'],'wg',j['workgroup'],[(m,round(v['gen_per_s']['median']),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4),'ga',v['gpu_ga_ms'] and round(v['gpu_ga_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null; }
k() { local n=$1 bin=$2; shift 2; timeout 45 $bin --adapter gpu sim "$@" --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(s $n)"; }
for i in 1 2; do
  k a_r1_$i $R acrobot --mode team --team 4 --generations 40
  k a_tree_$i $W acrobot --mode team --team 4 --generations 40
done
k a_tree_team2 $W acrobot --mode team --team 2 --generations 40
k a_tree_team8 $W acrobot --mode team --team 8 --generations 40
k a_r1_team8 $R acrobot --mode team --team 8 --generations 40
k a_tree_fused $W acrobot --mode fused --generations 20
k a_r1_fused $R acrobot --mode fused --generations 20
k c_tree_team4 $W cartpole --mode team --team 4 --generations 20
k c_r1_team4 $R cartpole --mode team --team 4 --generations 20
for t in 4 8; do for w in acrobot cartpole mountaincar; do
  timeout 60 $W --adapter gpu sim $w --mode all --team $t --generations 2 --check --quiet > $K/check_${w}_$t.txt 2>&1; echo "check $w team $t rc=$?"; grep -E "team vs|team +vs CPU" $K/check_${w}_$t.txt
done; done
for u in 6 12 16; do k r_t64_u$u $W rastrigin --generations 30 --override TEAM_STEP_UNROLL=$u; done
k r_auto $W rastrigin --generations 30
cd $OUT && tar czf k.tgz k && rm -rf k
