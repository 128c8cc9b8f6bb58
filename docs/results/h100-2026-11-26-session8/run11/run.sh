# session 8 run 11: persistent decode, A = main 97e3427 (kernel of 78935d1) vs B = down_proj rows taken by whole workgroups
. .baseline/setup_dev.sh
for s in a b; do mkdir -p /tmp/$s && gunzip -c .baseline/$s/wgfuse.gz > /tmp/$s/wgfuse && chmod +x /tmp/$s/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/$s/; done
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r11; P=$(seq -s, 1000 1015)
for r in 1 2 3; do for s in a b; do for g in 0 132; do
  /tmp/$s/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --persistent-wg $g --decode-check 8 --json $OUT/r11/$s-g$g-$r.json > $OUT/r11/$s-g$g-$r.txt 2>&1
  echo "$s groups $g run $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r11/$s-g$g-$r.json) $(grep -i 'cannot\|error' $OUT/r11/$s-g$g-$r.txt | head -1)"
done; done; done
cd $OUT && tar czf r11.tgz r11 && rm -rf r11
