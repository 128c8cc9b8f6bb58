# Session 27 run 7: why 1.5B decodes slower in one dispatch than in steps (run 6: F16 600 against
# 655 tok/s, Q8_0 453 against 683). The step decoder's kernels (--profile, position ~48), the
# persistent kernel's driver statistics at 1.5B (m = main 28616a8, u = no tags 3c308fc), and u
# against m at 1.5B q8_0 (the tags' cost there; bf16 in session 26: -11%).
START=$(date +%s); BUNDLE=bundle20.txz source .baseline/s27/common.sh
R=/tmp/r20; mkdir -p $R $OUT/st; O=$OUT/decode.txt
{
M15=$(build 1.5b); echo "built $(date +%T)"
for dt in f16 q8_0; do
  timeout 120 dist-m/wgfuse-linux-x64/wgfuse generate -m $M15 --prompt-ids $(ids 16) -n 32 --warmup 32 --temp 0 --ctx 4096 --dtype $dt --profile 2>&1 | tail -40
done
for b in m u; do for dt in f16 q8_0; do
  timeout 120 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M15 --prompt-ids $(ids 16) -n 4 --temp 0 --ctx 4096 --dtype $dt --decode persistent --dump-shaders --verbose 2> $R/dump-$b-$dt.txt > /dev/null
  SPIRV_AS=.baseline/s27/spirv-as python3 bench/baselines/vk_pipeline_stats.py $R/dump-$b-$dt.txt --tool .baseline/s27/vk_pipeline_stats --out $R/st-$b-$dt --grep decode_token 2>&1 | tail -1
  cp $R/st-$b-$dt/stats.md $OUT/st/$b-$dt.md; echo "$b-$dt $(grep decode_token $R/st-$b-$dt/stats.md | sed 's/{[^}]*}//')"
done; done
for rep in 1 2; do for b in u m; do
  dec $b-15q dist-$b $M15 16 128 $rep "--dtype q8_0 --decode persistent --decode-check 8"
done; dec steps-15q dist-m $M15 16 128 $rep "--dtype q8_0"; done
} 2>&1 | tee -a $O
cd $OUT && tar czf st.tgz st && rm -rf st
echo "done $(( $(date +%s) - START )) s" | tee -a $O
