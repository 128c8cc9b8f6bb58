# Session 12 run 11: served throughput, main a113030 ("main") against main + branch servepipe ("branch", two
# rounds in flight) in turns on one model (bench/baselines/serve_ab.sh from the branch, its GPU_REQUEST.md).
source .baseline/s12/common10.sh
for d in dist-main/wgfuse-linux-x64 dist/wgfuse-linux-x64; do $d/wgfuse-serve --help >/dev/null 2>&1 || { echo "$d/wgfuse-serve does not start"; exit 1; }; done
mkdir -p $OUT/r11
OUT=$OUT/r11/pipe FOLDER=$M5 TOKENIZER_DIR=/tmp/tok ROUNDS=2 CONCURRENCY=1,8,32 MAX_TOKENS=256 \
  BUILDS="main=dist-main/wgfuse-linux-x64 branch=dist/wgfuse-linux-x64" \
  timeout 500 bench/baselines/serve_ab.sh > $OUT/r11/pipe.log 2>&1; echo "serve_ab rc=$?"
sed -n '/== summary/,$p' $OUT/r11/pipe.log
cd $OUT && tar czf r11.tgz r11 && rm -rf r11
