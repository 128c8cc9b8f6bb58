# session 11 run 5: batched step with RoPE in the Q/K/V epilogue (main 1768abd, "rope") against 3e38c99 ("batch") and the session start ("main"); branch persist's final sweep (d51736a)
. .baseline/s11/common.sh
mkdir -p $OUT/r5
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8"
for rep in 1 2 3; do for v in main batch rope; do echo -n "$v rep$rep: "; timeout 60 $D/wgfuse-$v $G 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED; done; done 2>&1 | tee $OUT/r5/batch.txt
timeout 60 $D/wgfuse-rope $G --profile > $OUT/r5/profile_rope.txt 2>&1; grep -E "_rows|one pass" $OUT/r5/profile_rope.txt | tail -8
OUT=$OUT/r5/persist2 MODEL=$M5 WGFUSE=$D/wgfuse-persist timeout 300 bench/baselines/persist_sweep.sh > $OUT/r5/persist.log 2>&1; echo "persist rc=$?"
cat $OUT/r5/persist2/persist.md 2>/dev/null || tail -20 $OUT/r5/persist.log
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
