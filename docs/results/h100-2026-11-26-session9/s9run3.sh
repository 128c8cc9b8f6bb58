# session 9 run 3: batched step tuning sweep (team,rpt short; team,rpt tall)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/batch/dist.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse
mkdir -p $OUT/r3
for t in rule 32,1,64,4 64,1,32,2 32,1,32,4; do
  [ $t = rule ] && unset WGFUSE_BATCH_TUNING || export WGFUSE_BATCH_TUNING=$t
  $W generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --parallel 8 --profile --json $OUT/r3/$t.json > /dev/null 2> $OUT/r3/$t.txt
  echo "== $t"; grep -E "^parallel" $OUT/r3/$t.txt | cut -c1-200; tail -13 $OUT/r3/$t.txt | grep -E "_rows|one pass"
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
