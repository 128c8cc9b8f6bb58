# session 9 run 5: issue 26 on main 4d5c2ce (batch + browser2 merged): serve_bench.sh, wgfuse --parallel 1/8 and llama-server --parallel 8, warm-up round first
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
tar xzf .baseline/batch/dist.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
mkdir -p $OUT/s5
OUT=$OUT/s5 LLAMACPP=.llamacpp TOOLS=.llamacpp TOKENIZER_DIR=/tmp/tok WGFUSE=dist/wgfuse-linux-x64/wgfuse timeout 400 bench/baselines/serve_bench.sh 2>&1 | grep -v "^\[\|Writing"; echo "serve_bench rc=$?"
cd $OUT && tar czf s5.tgz s5 && rm -rf s5
