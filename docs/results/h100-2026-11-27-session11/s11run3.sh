# session 11 run 3: batched shapes (main 3e38c99 vs session start d227817), then branch persist's sweep (504090b)
. .baseline/s11/common.sh
mkdir -p $OUT/r3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/r3/gpu.txt
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8"
for rep in 1 2 3; do for v in main batch; do echo -n "$v rep$rep: "; timeout 60 $D/wgfuse-$v $G 2>&1 >/dev/null | grep -E "^parallel" || echo FAILED; done; done 2>&1 | tee $OUT/r3/batch.txt
for p in 1 4 16; do echo -n "batch p$p: "; timeout 60 $D/wgfuse-batch ${G% --parallel 8} --parallel $p 2>&1 >/dev/null | grep -E "^parallel"; done 2>&1 | tee -a $OUT/r3/batch.txt
timeout 60 $D/wgfuse-batch $G --profile > $OUT/r3/profile_batch.txt 2>&1; grep -E "_rows|one pass" $OUT/r3/profile_batch.txt | tail -9
OUT=$OUT/r3/persist MODEL=$M5 WGFUSE=$D/wgfuse-persist timeout 420 bench/baselines/persist_sweep.sh > $OUT/r3/persist.log 2>&1; echo "persist rc=$?"
cat $OUT/r3/persist/persist.md 2>/dev/null || tail -20 $OUT/r3/persist.log
timeout 30 $D/wgfuse-persist -v generate -m $M5 --prompt-ids 1,2,3 -n 4 --temp 0 --decode persistent --persistent-variant l2+reg+split --dump-shaders 2>$OUT/r3/dump.txt >/dev/null; gzip $OUT/r3/dump.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
