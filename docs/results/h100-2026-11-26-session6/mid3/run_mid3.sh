for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/main-3abdacb/
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
OUT=$OUT/ab A=.baseline/main-3abdacb/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=$M5" A_DTYPES=f16 B_DTYPES=f16,bf16 REPS=4 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
for s in A B; do bin=.baseline/main-3abdacb/wgfuse; [ $s = B ] && bin=dist/wgfuse-linux-x64/wgfuse
 for r in 1 2; do $bin generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --dtype f16 --decode persistent --warmup 64 --json $OUT/p_$s$r.json 2>&1 >/dev/null | tail -2; done; done
dist/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --profile 2>&1 >/dev/null | tail -22
rm -rf $OUT/ab/ab
