# session 10 run 2: batched decode kernels: attention in rounds (all cur variants) and tall_totals (TALL rows 16/32/64, or off) against main; hf_quant_check again (script fix)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s10/main.tgz && tar xzf .baseline/s10/cur.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse; C=dist/cur/wgfuse
mkdir -p $OUT/r2
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2; do
  for v in "main:$W:" "old_products:$C:WGFUSE_BATCH_TALL=0" "tall32:$C:" "tall16:$C:WGFUSE_BATCH_TALL_ROWS=16" "tall64:$C:WGFUSE_BATCH_TALL_ROWS=64"; do
    IFS=: read -r name bin envs <<< "$v"
    echo -n "$name rep$rep: "; env $envs timeout 60 $bin $G --parallel 8 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED
  done
  echo -n "single main: "; timeout 60 $W $G 2>&1 >/dev/null | grep -oE "decode [0-9.]+ tok/s"
  echo -n "single cur: "; timeout 60 $C $G 2>&1 >/dev/null | grep -oE "decode [0-9.]+ tok/s"
done 2>&1 | tee $OUT/r2/rates.txt
timeout 90 $C $G --parallel 8 --profile > $OUT/r2/profile_p8_tall32.txt 2>&1
timeout 90 env WGFUSE_BATCH_TALL_ROWS=16 $C $G --parallel 8 --profile > $OUT/r2/profile_p8_tall16.txt 2>&1
grep -E "rows|one pass" $OUT/r2/profile_p8_tall32.txt
timeout 240 python3 bench/baselines/hf_quant_check.py --wgfuse $C --tokenizer-dir /tmp/tok --out /tmp/hfq --models 0.5b --formats awq,gptq,gptq-v2-asym --json $OUT/r2/hf_quant.json > $OUT/r2/hf_quant.log 2>&1; echo "hf_quant rc=$?"
grep -vE "Loading weights" $OUT/r2/hf_quant.log | tail -14
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
