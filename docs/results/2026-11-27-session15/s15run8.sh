# Session 15 run 8 (H100): is the prefill scatter the GPU's clocks after idle time? The driver's shader cache
# on and filled by a first process; then H: 6 s of idle GPU before each process (sleep), I: none; the SM clock
# sampled every 20 ms meanwhile (nvidia-smi, read-only).
BUNDLE=bundle6.tgz source .baseline/s15/common.sh
R=$OUT/r8; mkdir -p $R
source .baseline/s15/fns.sh
one() {
  timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 --warmup 1 --json /tmp/r8.json > /tmp/r8.log 2>&1 || echo "$1 failed"
  python3 -c "import json; j=json.load(open('/tmp/r8.json')); print('$1', 'load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))"
}
one fill | tee $R/runs.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 20 > $R/clocks.csv 2>&1 & SMI=$!
for i in 1 2 3; do sleep 6; echo "$(date +%T.%N) H$i start"; one H$i; done | tee -a $R/runs.txt
for i in 1 2 3; do echo "$(date +%T.%N) I$i start"; one I$i; done | tee -a $R/runs.txt
kill $SMI
awk -F', ' '{print $2}' $R/clocks.csv | sort | uniq -c | sort -k2 -n | tail -12 | tee $R/clock_hist.txt
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
