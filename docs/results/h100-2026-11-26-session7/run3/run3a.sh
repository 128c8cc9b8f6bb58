. .baseline/setup_dev.sh
for m in 0.5b 1.5b; do (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('$m', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1; done
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/ab A=.baseline/main-100123b/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=f16 B_DTYPES=f16,bf16,q8_0,q4_0,q4_k REPS=3 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
for d in q8_0 q4_0 q4_k; do dist/wgfuse-linux-x64/wgfuse generate -m $M5 --dtype $d --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --profile 2>&1 >/dev/null | tail -15 > $OUT/profile_05b_$d.txt; tail -2 $OUT/profile_05b_$d.txt; done
cd $OUT && tar czf ab_runs.tgz ab/ab && rm -rf ab/ab
