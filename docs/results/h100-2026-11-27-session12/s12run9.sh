# Session 12 run 9: the chat page's cached load for f16 and Q8_0 and the main thread while generating (chat_load.mjs,
# through browser_gpu.sh: llm suite quick), then the row products' new shape rule against main 6129582 (same call).
source .baseline/s12/common.sh
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
mkdir -p $OUT/r9; R=$OUT/r9
MODEL=$M5 WGFUSE=$PWD/$D/wgfuse SUITES=llm QUICK=1 OUT=$R/browser timeout 420 bench/baselines/browser_gpu.sh 2>&1 | grep -E "chat_load: (cached|generating|errors)|browser_gpu:|\| llm" | cut -c1-400
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2; do for b in wgfuse-main wgfuse; do echo "$b: $(timeout 60 $D/$b $G --parallel 8 2>&1 >/dev/null | grep -E '^parallel' | cut -c1-170)"; done; done | tee $R/parallel8.txt
for n in 16 64; do for rep in 1 2; do for b in wgfuse-main wgfuse; do echo "prompt $n $b: $(timeout 60 $D/$b generate -m $M5 --prompt-ids $(seq -s, 1000 $((1000 + n - 1))) -n 4 --temp 0 --warmup 4 2>&1 >/dev/null | grep -oE 'prefill [0-9.]+ tok/s')"; done; done; done | tee $R/prefill.txt
timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --warmup 8 --parallel 8 --profile=3 2>$R/b8-profile.txt >/dev/null
timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 2 --temp 0 --warmup 1 --profile-prefill=3 2>$R/p16-profile.txt >/dev/null
cd $OUT && tar czf r9.tgz r9 && rm -rf r9
