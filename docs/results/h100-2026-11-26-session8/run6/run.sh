# session 8 run 6: decode A/B, A = main 5c9c02a, B = epilogue inputs (bias, RoPE, residual) loaded before the dots
. .baseline/setup_dev.sh
for s in a b; do mkdir -p /tmp/$s && gunzip -c .baseline/$s/wgfuse.gz > /tmp/$s/wgfuse && chmod +x /tmp/$s/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/$s/; done
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)
q.build_model('1.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/r6 A=/tmp/a/wgfuse B=/tmp/b/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=f16 B_DTYPES=f16 REPS=5 bench/baselines/ab_decode.sh > /dev/null 2>&1; echo ab rc=$?
cat $OUT/r6/ab.md
for s in a b; do /tmp/$s/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --warmup 64 --profile > $OUT/r6/profile-$s.txt 2>&1; done
grep -A14 -i "kernel" $OUT/r6/profile-b.txt | head -30
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
