# session 9 run 7: main after the merges (idle slots' teams skip their products; profile_plans shared): generate --parallel 1/8 and serve --parallel 8 at C=1,8
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
tar xzf .baseline/batch/dist.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse
mkdir -p $OUT/r7
for p in 1 8; do $W generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel $p --json $OUT/r7/p$p.json 2>&1 >/dev/null | grep -E "^parallel|decode"; done
$W serve --model $M5 --dtype f16 --parallel 8 --port 8080 --db $OUT/r7/results.sqlite --api-rate off > $OUT/r7/serve.log 2>&1 &
for i in $(seq 120); do curl -sf http://127.0.0.1:8080/v1/models > /dev/null && break; sleep 1; done
python3 bench/serve_load.py --concurrency 8 --max-tokens 32 > /dev/null 2>&1
python3 bench/serve_load.py --concurrency 1,8 --max-tokens 256 --json $OUT/r7/serve_p8.json
kill %1; wait
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
