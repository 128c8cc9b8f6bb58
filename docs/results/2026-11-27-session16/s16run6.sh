# Session 16 run 6 (H100, same machine as run 5): the prefill scatter against the GPU's state. nvidia-smi samples
# P-state, SM and memory clocks, event reasons and power every 10 ms (read-only) while 6 processes run as run 5's
# A (cache off, --warmup 1, WGFUSE_PREFILL_TRACE=1); each process's start and end in epoch seconds beside it.
BUNDLE=bundle5.tgz source .baseline/s16/common.sh
R=$OUT/r6; mkdir -p $R
source .baseline/s16/fns.sh
nvidia-smi --help-query-gpu | grep -iE "reasons.active|pstate|clocks.mem" | head -5 > $R/fields.txt
F=$(grep -q clocks_event_reasons.active $R/fields.txt && echo clocks_event_reasons.active || echo clocks_throttle_reasons.active)
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,$F,power.draw,utilization.gpu --format=csv,noheader -lms 10 > $R/smi.csv 2>&1 &
SMI=$!
sleep 1
for i in 1 2 3 4 5 6; do
  echo "P$i start $(date +%s.%N)"
  WGFUSE_PREFILL_TRACE=1 __GL_SHADER_DISK_CACHE=0 timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 --warmup 1 --json /tmp/r6.json > /tmp/r6.log 2>&1
  echo "P$i end $(date +%s.%N) $(python3 -c "import json; j=json.load(open('/tmp/r6.json')); print('load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))")"
  grep "prefill trace" /tmp/r6.log | sed 's/^/   /'
  sleep 3
done | tee $R/runs.txt
kill $SMI
head -3 $R/smi.csv; wc -l $R/smi.csv
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
