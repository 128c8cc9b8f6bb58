# Session 16 run 7 (H100): the prefill scatter made to happen and undone. Experiment build (branch exp-scatter):
# WGFUSE_IDLE_MS=4000 leaves the GPU idle 4 s after the warm-up, just before the timed run; WGFUSE_REWARM=8 then
# runs 8 more untimed prompt rounds (prompt + 1 token) first. Driver shader cache on (default). nvidia-smi samples
# the SM clock every 10 ms (read-only).
BUNDLE=bundle7.tgz source .baseline/s16/common.sh
R=$OUT/r7; mkdir -p $R
source .baseline/s16/fns.sh
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,clocks_event_reasons.active,power.draw,utilization.gpu --format=csv,noheader -lms 10 > $R/smi.csv 2>&1 &
SMI=$!
one() {  # label env...
  local label=$1; shift
  echo "$label start $(date +%s.%N)"
  env WGFUSE_PREFILL_TRACE=1 "$@" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 --warmup 1 --json /tmp/r7.json > /tmp/r7.log 2>&1 || echo "$label failed"
  echo "$label end $(date +%s.%N) $(python3 -c "import json; j=json.load(open('/tmp/r7.json')); print('load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))")"
  grep "prefill trace" /tmp/r7.log | tail -1 | sed 's/^/   /'
}
for i in 1 2 3; do
  one I$i WGFUSE_IDLE_MS=4000
  one R$i WGFUSE_IDLE_MS=4000 WGFUSE_REWARM=8
  one N$i X=1
done | tee $R/runs.txt
kill $SMI
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
