# Session 14 run 1 (H100): prefill products split along K over workgroups (the residual products o and
# down). Part 1: a sweep of forced tiles with --profile-prefill (per-kernel GPU times) at 512, 1,024 and
# 4,000 tokens. Part 2: prefill_bench.sh, main (dist-main) against this tree's rule, 5 interleaved runs.
BUNDLE=bundle1.tgz source .baseline/s14/common.sh
R=$OUT/r1; mkdir -p $R/sweep
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
for len in 512 1024 4000; do
  for tile in auto 128x128x1 128x128x2 128x128x4 128x128x8 64x128x1x2 64x128x2x2 64x128x4x2 64x64x1 64x64x4 32x64x1; do
    timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids $len) -n 1 --temp 0 --ctx 4096 --warmup 1 --prefill-tile $tile --profile-prefill=3 2>$R/sweep/$tile-$len.txt >/dev/null
    echo "$len $tile: $(grep -E '^(qkv|o_proj|gate|down)' $R/sweep/$tile-$len.txt | awk '{printf "%s %s us; ", $1, $4}') $(grep -E 'one pass' $R/sweep/$tile-$len.txt | tr -s ' ' | cut -c1-60) $(grep -oE 'rror.*' $R/sweep/$tile-$len.txt | head -1)"
  done
done | tee $R/sweep.txt
OUT=$R/pf MODEL=$M5 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;splitk:$D/wgfuse:" timeout 400 bench/baselines/prefill_bench.sh 2>&1 | tail -12 | tee $R/pf.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
