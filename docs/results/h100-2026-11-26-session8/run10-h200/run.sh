# session 8 run 10: persistent decode, A = main ff64b2b (staging skipped where idle; run8 measured 78935d1 at +19% on it) vs B = 78935d1 + staging with two vec4s per trip, eight-group trips for long rows, the V sum with eight loads per trip
. .baseline/setup_dev.sh
for s in a b; do mkdir -p /tmp/$s && gunzip -c .baseline/$s/wgfuse.gz > /tmp/$s/wgfuse && chmod +x /tmp/$s/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/$s/; done
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r10; P=$(seq -s, 1000 1015)
for r in 1 2 3; do for s in a b; do for g in 0 132; do
  /tmp/$s/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --persistent-wg $g --decode-check 8 --json $OUT/r10/$s-g$g-$r.json > $OUT/r10/$s-g$g-$r.txt 2>&1
  echo "$s groups $g run $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r10/$s-g$g-$r.json) $(grep -i 'cannot\|error' $OUT/r10/$s-g$g-$r.txt | head -1)"
done; done; done
cd $OUT && tar czf r10.tgz r10 && rm -rf r10
