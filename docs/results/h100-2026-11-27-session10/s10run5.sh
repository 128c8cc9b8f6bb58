# session 10 run 5: steps in a command buffer each (host records while the GPU runs) with tall v2 (new) against v3 with one command buffer per 8 steps, and main at the session's start
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s10/main.tgz && tar xzf .baseline/s10/v3.tgz && tar xzf .baseline/s10/new.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r5
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2 3; do
  for v in main v3 new; do
    d=dist/$v; [ $v = main ] && d=dist/wgfuse-linux-x64
    echo -n "$v rep$rep: "; timeout 60 $d/wgfuse $G --parallel 8 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED
  done
done 2>&1 | tee $OUT/r5/rates.txt
for p in 1 4 16; do echo -n "new p$p: "; timeout 60 dist/new/wgfuse $G --parallel $p 2>&1 >/dev/null | grep -E "^parallel|decode [0-9]"; done 2>&1 | tee -a $OUT/r5/rates.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
