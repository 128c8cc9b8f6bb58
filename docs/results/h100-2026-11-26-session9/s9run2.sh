# session 9 run 2: issue 26, batch branch 325adfe+: generate --parallel 1/8/16 with the batched step's profile
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/batch/dist.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse
mkdir -p $OUT/r2
for p in 1 8 16; do
  $W generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel $p --profile --json $OUT/r2/p$p.json > /dev/null 2> $OUT/r2/p$p.txt
  grep -E "^parallel|tok/s" $OUT/r2/p$p.txt | head -3
done
cat $OUT/r2/p8.txt | tail -16
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
