# Session 27 run 1: the driver's statistics of the persistent decode kernel for u (no tags), r (main)
# and s with each ablation switch (branch tags-structure). Question: run 14's removals were not
# additive (any one of plain / nocur / nopart recovered most of nocheck's cost): registers or binary
# size crossing a threshold?
START=$(date +%s); BUNDLE=bundle14.txz source .baseline/s26/common.sh
R=/tmp/r16; mkdir -p $R $OUT/st; M5=$(build 0.5b); echo "built $(date +%T)"
for x in u r nocheck nocheck,plain nocheck,nocur nocheck,nopart nocheck,nocur,nopart,plain; do
  case $x in u|r) b=$x; unset WGFUSE_ABLATE;; *) b=s; export WGFUSE_ABLATE=$x;; esac
  for dt in f16 q8_0; do
    l=$(echo $x | tr , +)-$dt
    timeout 120 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 4 --temp 0 --ctx 4096 --dtype $dt --decode persistent --dump-shaders --verbose 2> $R/dump-$l.txt > /dev/null; echo "$l rc $?"
    SPIRV_AS=.baseline/s27/spirv-as python3 bench/baselines/vk_pipeline_stats.py $R/dump-$l.txt --tool .baseline/s27/vk_pipeline_stats --out $R/st-$l --grep decode_token 2>&1 | tail -2
    cp $R/st-$l/stats.md $OUT/st/$l.md; grep -c . $R/dump-$l.txt
  done
done
unset WGFUSE_ABLATE
for f in $OUT/st/*.md; do echo "== $f"; grep decode_token $f | sed 's/{[^}]*}//' ; done
head -3 $OUT/st/u-f16.md
cd $OUT && tar czf st.tgz st && rm -rf st
echo "done $(( $(date +%s) - START )) s"
