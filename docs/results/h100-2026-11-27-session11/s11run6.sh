# session 11 run 6: main 24bdf80 (all merges) — serve_join.sh (session-start server 8d3ca3a as "before", main with --join-tokens 512), then generate single and --parallel 8
. .baseline/s11/common.sh
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
mkdir -p $OUT/r6
for s in wgfuse-serve-main wgfuse-serve; do $D/$s --help >/dev/null 2>&1 || { echo "$s does not start"; exit 1; }; done
OUT=$OUT/r6 FOLDER=$M5 TOKENIZER_DIR=/tmp/tok BEFORE=$D/wgfuse-serve-main JOIN_TOKENS=512 timeout 300 bench/baselines/serve_join.sh > $OUT/r6/join.log 2>&1; echo "join rc=$?"
tail -4 $OUT/r6/join.log
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2; do timeout 60 $D/wgfuse-final $G 2>&1 >/dev/null | grep -E "decode [0-9]" | sed 's/.*decode/single: decode/' | cut -c1-60; timeout 60 $D/wgfuse-final $G --parallel 8 2>&1 >/dev/null | grep -E "^parallel"; done | tee $OUT/r6/generate.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
