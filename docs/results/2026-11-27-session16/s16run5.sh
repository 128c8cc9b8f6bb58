# Session 16 run 5 (H100, a fresh machine): the prefill scatter (issue 24 item 3), with session 15 run 6's
# conditions and an experiment build (branch exp-scatter) whose WGFUSE_PREFILL_TRACE=1 prints, for the warm-up's
# prompt phase and the timed one: host time to record, to submit, to wait for the first token, and the GPU time
# of the phase's first compute pass (the whole prefill chunk, head and picker: one pass) by timestamps.
BUNDLE=bundle5.tgz source .baseline/s16/common.sh
R=$OUT/r5; mkdir -p $R
source .baseline/s16/fns.sh
one() {  # label env... -- extra args
  local label=$1; shift; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env WGFUSE_PREFILL_TRACE=1 "${envs[@]}" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 "$@" --json /tmp/r5.json > /tmp/r5.log 2>&1 || echo "$label failed"
  echo "$label $(python3 -c "import json; j=json.load(open('/tmp/r5.json')); print('load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))")"
  grep "prefill trace" /tmp/r5.log | sed 's/^/   /'
}
rm -rf ~/.nv ~/.cache/nvidia
for i in 1 2 3; do one A$i __GL_SHADER_DISK_CACHE=0 -- --warmup 1; done | tee $R/a.txt
rm -rf ~/.nv ~/.cache/nvidia
for i in 1 2 3; do one B$i X=1 -- --warmup 1; done | tee $R/b.txt
for i in 1 2; do one C$i __GL_SHADER_DISK_CACHE=0 -- --warmup 4; done | tee $R/c.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
