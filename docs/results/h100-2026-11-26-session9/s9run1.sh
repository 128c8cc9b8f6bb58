# session 9 run 1: issue 26, the batch branch (e178916 rebased on f3c59eb + serve_load.py): serve_bench.sh
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
tar xzf .baseline/batch/dist.tgz && cp .baseline/batch/serve_load.py bench/ && cp .baseline/batch/serve_bench.sh bench/baselines/
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
which node; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ldd dist/wgfuse-linux-x64/wgfuse-serve | grep "not found"
mkdir -p $OUT/s1
OUT=$OUT/s1 LLAMACPP=.llamacpp TOOLS=.llamacpp TOKENIZER_DIR=/tmp/tok WGFUSE=dist/wgfuse-linux-x64/wgfuse timeout 480 bench/baselines/serve_bench.sh; echo "serve_bench rc=$?"
for f in $OUT/s1/*.server.log; do echo "== $f"; tail -4 $f; done
cd $OUT && tar czf s1.tgz s1 && rm -rf s1
