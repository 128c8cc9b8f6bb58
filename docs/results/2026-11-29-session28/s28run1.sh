# Prepared in session 27 for the next session's first run (~4 min): the default down split's rule
# end to end. n = main f779172 (default 'down': 2 chunks at 1.5B, 4 at 0.5B), m = 28616a8 (down=4
# always). Predicted from session 27's run 8: 1.5B q8_0 ~454 -> ~527 tok/s, bf16 ~570 -> ~626, 0.5B
# level (the same kernel). Then, on n at 1.5B q8_0, down with and without ahead (run 8: without ahead
# 485 against 454 at down=4), and the driver's statistics of n's 1.5B kernels (q8_0 spilled 16 bytes
# a thread at down=4), and q8_0 on grids of 384 and 396 workgroups (3 an SM).
START=$(date +%s); BUNDLE=bundle-next.txz source .baseline/s27/common.sh
R=/tmp/rn; mkdir -p $R $OUT/st; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for rep in 1 2 3; do for dt in q8_0 bf16; do for b in m n; do
  dec $b-15-$dt dist-$b $M15 16 128 $rep "--dtype $dt --decode persistent --decode-check 8"
done; done; done
for rep in 1 2; do for dt in f16 q8_0; do for b in m n; do
  dec $b-05-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8"
done; done; done
for rep in 1 2 3; do for v in split+down+rounds=4+ahead split+down+rounds=4; do
  dec n-15-q8_0-$v dist-n $M15 16 128 $rep "--dtype q8_0 --decode persistent --decode-check 8 --persistent-variant $v"
done; done
dec steps-15-q8_0 dist-n $M15 16 128 1 "--dtype q8_0"
# q8_0's kernel has ~80 registers (f16's ~100): three workgroups an SM fit by registers, but the
# automatic grid stops at 256 (a power of two). More teams keep more weight loads in flight.
for rep in 1 2; do for g in 256 384 396; do
  dec n-15-q8_0-wg$g dist-n $M15 16 128 $rep "--dtype q8_0 --decode persistent --decode-check 8 --persistent-wg $g"
  dec n-05-q8_0-wg$g dist-n $M5 16 128 $rep "--dtype q8_0 --decode persistent --decode-check 8 --persistent-wg $g"
done; done
for dt in q8_0 bf16; do
  timeout 120 dist-n/wgfuse-linux-x64/wgfuse generate -m $M15 --prompt-ids $(ids 16) -n 4 --temp 0 --ctx 4096 --dtype $dt --decode persistent --dump-shaders --verbose 2> $R/dump-$dt.txt > /dev/null
  SPIRV_AS=.baseline/s27/spirv-as python3 bench/baselines/vk_pipeline_stats.py $R/dump-$dt.txt --tool .baseline/s27/vk_pipeline_stats --out $R/st-$dt --grep decode_token 2>&1 | tail -1
  cp $R/st-$dt/stats.md $OUT/st/n-15-$dt.md; echo "n-15-$dt $(grep decode_token $R/st-$dt/stats.md | sed 's/{[^}]*}//')"
done
} 2>&1 | tee -a $O
cd $OUT && tar czf st.tgz st && rm -rf st
echo "done $(( $(date +%s) - START )) s" | tee -a $O
