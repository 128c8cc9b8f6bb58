# Session 16 run 8 (H100): the warm-up that ends at working clocks. Experiment build (branch exp-scatter, the
# committed warm-up plus hooks): WGFUSE_IDLE_BEFORE_WARMUP_MS=4000 idles the GPU 4 s before --warmup 1;
# WGFUSE_NO_SETTLE=1 keeps the old warm-up (one round). Alternating, 3 each, driver shader cache on.
BUNDLE=bundle8.tgz source .baseline/s16/common.sh
R=$OUT/r8; mkdir -p $R
source .baseline/s16/fns.sh
one() {  # label env...
  local label=$1; shift
  env WGFUSE_PREFILL_TRACE=1 WGFUSE_IDLE_BEFORE_WARMUP_MS=4000 "$@" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 --warmup 1 --json /tmp/r8.json > /tmp/r8.log 2>&1 || echo "$label failed"
  echo "$label $(python3 -c "import json; j=json.load(open('/tmp/r8.json')); print('load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))") warm-up rounds $(($(grep -c 'prefill trace' /tmp/r8.log) - 1))"
  grep "prefill trace" /tmp/r8.log | tail -1 | sed 's/^/   /'
}
for i in 1 2 3; do one OLD$i WGFUSE_NO_SETTLE=1; one NEW$i X=1; done | tee $R/runs.txt
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
