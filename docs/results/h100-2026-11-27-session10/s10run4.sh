# session 10 run 4: tall_totals v3 (teams over columns, RPT rows x every slot per thread) against v2 (cur) and the session's start (main)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s10/main.tgz && tar xzf .baseline/s10/cur.tgz && tar xzf .baseline/s10/v3.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r4
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2 3; do
  for v in main cur v3; do
    d=dist/$v; [ $v = main ] && d=dist/wgfuse-linux-x64
    echo -n "$v rep$rep: "; timeout 60 $d/wgfuse $G --parallel 8 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED
  done
done 2>&1 | tee $OUT/r4/rates.txt
timeout 90 dist/v3/wgfuse $G --parallel 8 --profile > $OUT/r4/profile_p8_v3.txt 2>&1
timeout 90 dist/v3/wgfuse $G --parallel 4 --profile > $OUT/r4/profile_p4_v3.txt 2>&1
timeout 90 dist/v3/wgfuse $G --parallel 16 > $OUT/r4/p16_v3.txt 2>&1
grep -E "rows|one pass" $OUT/r4/profile_p8_v3.txt; grep parallel $OUT/r4/profile_p4_v3.txt $OUT/r4/p16_v3.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
