# session 8 run 3: where the persistent decoder's time goes: each stage's work skipped in turn (an experiment build: tokens wrong, barriers kept)
. .baseline/setup_dev.sh
mkdir -p /tmp/exp && gunzip -c .baseline/exp/wgfuse.gz > /tmp/exp/wgfuse && chmod +x /tmp/exp/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/exp/
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r3; P=$(seq -s, 1000 1015)
for r in 1 2; do for skip in 0 1 2 4 8 16 32 63; do
  WGFUSE_EXPERIMENT_SKIP=$skip /tmp/exp/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --decode-check 0 --json $OUT/r3/skip$skip-$r.json > $OUT/r3/skip$skip-$r.txt 2>&1
  echo "skip $skip run $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r3/skip$skip-$r.json)"
done; done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
