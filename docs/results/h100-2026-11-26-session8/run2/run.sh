# session 8 run 2: persistent decode, activations/KV through atomics (old) vs plain Coherent loads (new), and the step decoder
. .baseline/setup_dev.sh
W=dist/wgfuse-linux-x64/wgfuse
mkdir -p /tmp/old && gunzip -c .baseline/s8-atomic/wgfuse.gz > /tmp/old/wgfuse && chmod +x /tmp/old/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/old/
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r2; P=$(seq -s, 1000 1015)
for r in 1 2 3; do
  for side in old new; do B=$W; [ $side = old ] && B=/tmp/old/wgfuse
    $B generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --decode-check 8 --json $OUT/r2/pers-$side-$r.json > $OUT/r2/pers-$side-$r.txt 2>&1; echo "pers $side $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r2/pers-$side-$r.json)"
  done
  $W generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --json $OUT/r2/steps-$r.json > $OUT/r2/steps-$r.txt 2>&1; echo "steps $r $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r2/steps-$r.json)"
done
tail -4 $OUT/r2/pers-new-1.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
