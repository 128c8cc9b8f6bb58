. .baseline/setup_dev.sh
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('1.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/ab A=.baseline/main-100123b/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=f16 B_DTYPES=f16 REPS=5 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
for b in .baseline/main-100123b/wgfuse dist/wgfuse-linux-x64/wgfuse; do $b generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --profile 2>&1 >/dev/null | tail -16; done
dist/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 8 --temp 0 --write-plan $OUT/plan_05b.json > /dev/null 2>&1; ls -la $OUT/plan_05b.json; gzip $OUT/plan_05b.json
cd $OUT && tar czf ab_runs.tgz ab/ab && rm -rf ab/ab
