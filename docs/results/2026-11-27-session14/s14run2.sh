# Session 14 run 2 (H100): the tile sweep again, forced splits now the most that fit (run 1's failed
# at the load's 4,096-token plan), at 512, 1,024, 2,048 and 4,000 tokens; main's profile beside.
BUNDLE=bundle2.tgz source .baseline/s14/common.sh
R=$OUT/r2; mkdir -p $R/sweep
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
for len in 512 1024 2048 4000; do
  for tile in main auto 128x128x1 128x128x2 128x128x4 128x128x8 64x64x1 64x64x2 64x64x4 64x128x1x2; do
    if [ $tile = main ]; then B=dist-main/wgfuse-linux-x64/wgfuse; a=""; else B=$D/wgfuse; a="--prefill-tile $tile"; fi
    timeout 60 $B generate -m $M5 --prompt-ids $(ids $len) -n 1 --temp 0 --ctx 4096 --warmup 1 $a --profile-prefill=3 2>$R/sweep/$tile-$len.txt >/dev/null
    echo "$len $tile: $(grep -E '^(qkv|o_proj|gate|down)' $R/sweep/$tile-$len.txt | awk '{printf "%s %s; ", $1, $4}') $(grep -E 'one pass' $R/sweep/$tile-$len.txt | tr -s ' ' | cut -d' ' -f4,8-) $(grep -oE 'rror.*' $R/sweep/$tile-$len.txt | head -1)"
  done
done | tee $R/sweep.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
