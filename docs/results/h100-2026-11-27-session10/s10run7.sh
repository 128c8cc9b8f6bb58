# session 10 run 7: serve under load after the solo merge (main 1489edb): wgfuse --parallel 1/8 and llama-server --parallel 8 (serve_bench.sh); a long prompt joining a running stream (serve_load.py --join-long)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
tar xzf .baseline/s10/dist.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
mkdir -p $OUT/r7
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/r7/gpu.txt
OUT=$OUT/r7 TOKENIZER_DIR=/tmp/tok TOOLS=.baseline/s10/tools LLAMACPP=.llamacpp CONCURRENCY=1,8,32 MAX_TOKENS=256 timeout 420 bench/baselines/serve_bench.sh > $OUT/r7/bench.log 2>&1; echo "serve_bench rc=$?"
grep -hE "concurrency|streams|tok/s|ttft" $OUT/r7/*.log | grep -v warmup | head -30
M=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-* | head -1)
dist/wgfuse-linux-x64/wgfuse serve --model $M --dtype f16 --parallel 8 --port 8090 --db $OUT/r7/join.sqlite --api-rate off > $OUT/r7/join.server.log 2>&1 &
for i in $(seq 120); do curl -sf http://127.0.0.1:8090/v1/models > /dev/null && break; sleep 1; done
python3 bench/serve_load.py --url http://127.0.0.1:8090/v1 --concurrency 8 --max-tokens 32 > /dev/null 2>&1
timeout 120 python3 bench/serve_load.py --url http://127.0.0.1:8090/v1 --concurrency 1 --max-tokens 1024 --join-long 2000 --json $OUT/r7/join.json 2>&1 | tail -5
curl -s 127.0.0.1:8090/health; echo
kill %1; wait
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
