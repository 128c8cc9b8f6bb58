# session 10 run 3: tall_totals v2 (norm folded into the weights, 1/rms once per workgroup) against old products and main
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s10/main.tgz && tar xzf .baseline/s10/cur.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse; C=dist/cur/wgfuse
mkdir -p $OUT/r3
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2 3; do
  for v in "main:$W:" "old_products:$C:WGFUSE_BATCH_TALL=0" "tall32:$C:" "tall16:$C:WGFUSE_BATCH_TALL_ROWS=16"; do
    IFS=: read -r name bin envs <<< "$v"
    echo -n "$name rep$rep: "; env $envs timeout 60 $bin $G --parallel 8 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED
  done
done 2>&1 | tee $OUT/r3/rates.txt
timeout 90 $C $G --parallel 8 --profile > $OUT/r3/profile_p8_tall32.txt 2>&1
grep -E "rows|one pass" $OUT/r3/profile_p8_tall32.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
