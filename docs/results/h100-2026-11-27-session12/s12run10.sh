# Session 12 run 10: the chat page's Q8_0 and f16 cached loads with the page's adapter retry (browser_gpu.sh, llm
# suite quick), then the row-product rule at 1.5B: this tree (main a113030 + servepipe) against main 6129582.
source .baseline/s12/common10.sh
mkdir -p $OUT/r10; R=$OUT/r10
MODEL=$M5 WGFUSE=$PWD/$D/wgfuse SUITES=llm QUICK=1 OUT=$R/browser timeout 330 bench/baselines/browser_gpu.sh 2>&1 | grep -E "chat_load: (cached|generating|errors)|\| llm" | cut -c1-300
M15=$(build 1.5b)
G="generate -m $M15 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for b in wgfuse-6129582 wgfuse; do echo "1.5B $b: $(timeout 90 $D/$b $G 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s') | $(timeout 90 $D/$b $G --parallel 8 2>&1 >/dev/null | grep -E '^parallel' | cut -c1-170)"; done | tee $R/b15.txt
for n in 16 64; do for b in wgfuse-6129582 wgfuse; do echo "1.5B prompt $n $b: $(timeout 90 $D/$b generate -m $M15 --prompt-ids $(seq -s, 1000 $((1000 + n - 1))) -n 4 --temp 0 --warmup 4 2>&1 >/dev/null | grep -oE 'prefill [0-9.]+ tok/s')"; done; done | tee -a $R/b15.txt
cd $OUT && tar czf r10.tgz r10 && rm -rf r10
