# Session 13 run 8 (H100): the short prefill passes' gate/up through xreg_totals (two slot groups of 8), this tree
# against main 63ae0d3 (dist-main) in one call: prompt lengths 1-64 (warm prefill of one chunk), --profile-prefill
# of a 16-token pass, generate --parallel 8, then served TTFT at C=1 and C=8 (serve_ab.sh, one round).
BUNDLE=bundle8.tgz source .baseline/s13/common.sh
R=$OUT/r8; mkdir -p $R
for n in 1 16 32 48 64; do for rep in 1 2; do for d in dist-main dist; do echo "prompt $n $d: $(timeout 60 $d/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 $((1000 + n - 1))) -n 4 --temp 0 --warmup 4 2>&1 >/dev/null | grep -oE 'prefill [0-9.]+ tok/s|rror.*')"; done; done; done | tee $R/prefill.txt
for d in dist-main dist; do timeout 60 $d/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 2 --temp 0 --warmup 1 --profile-prefill=3 2>$R/p16-profile-$d.txt >/dev/null; echo "$d $(grep -E 'gate_up|one pass|chunk' $R/p16-profile-$d.txt | tr -s ' ' | tr '\n' ' ' | cut -c1-400)"; done | tee $R/p16.txt
for d in dist-main dist; do echo "$d: $(timeout 90 $d/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s|^parallel.*|rror.*' | tr '\n' ' ' | cut -c1-250)"; done | tee $R/parallel8.txt
OUT=$R/serve FOLDER=$M5 BUILDS="main=dist-main/wgfuse-linux-x64 this=dist/wgfuse-linux-x64" ROUNDS=1 CONCURRENCY=1,8 JOIN_WORDS=0 timeout 300 bench/baselines/serve_ab.sh 2>&1 | tail -12 | tee $R/serve_ab.txt
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
