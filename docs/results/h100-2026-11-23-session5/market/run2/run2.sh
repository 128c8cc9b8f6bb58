#!/usr/bin/env bash
# market run 2: the robustness penalty of the vec4 record (team 4 robust 1.49 vs no-robust 1.07 in run 1):
# MARKET_ALL_GROUPS (uniform-address loads) and MARKET_WOUT_SHARED (W_out in workgroup memory, fewer
# registers), robust and not; auto at 10,000 and 65,536 (auto_min_team 4); --check.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_market; NEW=$H/wgfuse; OLD=dist/wgfuse-linux-x64/wgfuse
K=$OUT/k; mkdir -p $K
k() { local n=$1 b=$2 g=$3; shift 3; timeout 30 $b --adapter gpu sim market "$@" --generations $g --quiet --json $K/$n.json > $K/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$K/$n.json'));print('pop',j.get('pop'),'team',j['team'],[(m,round(v['gen_per_s']['median'],1),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null)"; }
T="--mode team --team 4"
{
k old_team4 $OLD 30 $T
k t4 $NEW 30 $T
k t4_all $NEW 30 $T --override MARKET_ALL_GROUPS=1
k t4_wsh $NEW 30 $T --override MARKET_WOUT_SHARED=1
k t4_all_wsh $NEW 30 $T --override MARKET_ALL_GROUPS=1 --override MARKET_WOUT_SHARED=1
k t4_nopf $NEW 30 $T --override MARKET_PREFETCH=0
k t4_wsh_nopf $NEW 30 $T --override MARKET_WOUT_SHARED=1 --override MARKET_PREFETCH=0
k t4_nr $NEW 30 $T --unsafe-no-robustness
k t4_all_nr $NEW 30 $T --override MARKET_ALL_GROUPS=1 --unsafe-no-robustness
k t4_wsh_nr $NEW 30 $T --override MARKET_WOUT_SHARED=1 --unsafe-no-robustness
k t8 $NEW 30 --mode team --team 8
k t8_wsh $NEW 30 --mode team --team 8 --override MARKET_WOUT_SHARED=1
k t4_wsh_wg128 $NEW 30 $T --override MARKET_WOUT_SHARED=1 --workgroup 128
k auto $NEW 30
k auto_p65536 $NEW 8 --pop 65536
k t4_wsh_p65536 $NEW 8 --pop 65536 $T --override MARKET_WOUT_SHARED=1
k fused $NEW 20 --mode fused
k t4_b $NEW 30 $T
k t4_wsh_b $NEW 30 $T --override MARKET_WOUT_SHARED=1
k t4_all_b $NEW 30 $T --override MARKET_ALL_GROUPS=1
} 2>&1 | tee $OUT/summary.txt
for o in "" "--override MARKET_WOUT_SHARED=1" "--override MARKET_ALL_GROUPS=1"; do
timeout 40 $NEW --adapter gpu sim market --mode all --team 4 --generations 3 --check --quiet $o > $K/check.txt 2>&1; echo "check market team4 $o rc=$?" | tee -a $OUT/summary.txt
grep -E "team vs perstep|fused vs perstep|check passed|error" $K/check.txt | tee -a $OUT/summary.txt
done
cd $OUT && tar czf k.tgz k && rm -rf k
