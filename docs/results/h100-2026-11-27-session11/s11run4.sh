# session 11 run 4: branch join (154039c) serve_join.sh: main's server (before) vs join's with --join-tokens 256/512
. .baseline/s11/common.sh
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
mkdir -p $OUT/r4
for s in wgfuse-serve-main wgfuse-serve; do $D/$s --help >/dev/null 2>&1 || { echo "$s does not start:"; $D/$s --help 2>&1 | head -3; exit 1; }; done
OUT=$OUT/r4 FOLDER=$M5 TOKENIZER_DIR=/tmp/tok BEFORE=$D/wgfuse-serve-main JOIN_TOKENS=256,512 timeout 420 bench/baselines/serve_join.sh > $OUT/r4/join.log 2>&1; echo "join rc=$?"
tail -12 $OUT/r4/join.log
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
