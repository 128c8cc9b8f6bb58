# Session 15 run 6 (H100): the prefill scatter (issue 24 item 3). 0.5B f16, 512-token prompt, --warmup 1 unless
# marked, each line one process: load ms, timed prefill ms, and the chunk's GPU time where profiled.
#   A: the NVIDIA driver's shader disk cache off (__GL_SHADER_DISK_CACHE=0): every process compiles every shader.
#   B: the cache on, emptied first: the first process compiles, the later ones read the cache.
#   C: the cache off, --warmup 4 (a longer warm-up).
#   D: the cache off, --profile-prefill=3 (the chunk's GPU time by timestamps).
BUNDLE=bundle6.tgz source .baseline/s15/common.sh
R=$OUT/r6; mkdir -p $R
source .baseline/s15/fns.sh
one() {  # label env... -- extra args
  local label=$1; shift; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) -n 1 --temp 0 --dtype f16 --ctx 4096 "$@" --json /tmp/r6.json > /tmp/r6.log 2>&1 || echo "$label failed"
  python3 -c "import json; j=json.load(open('/tmp/r6.json')); print('$label', 'load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1))"
  grep -E "^one pass" /tmp/r6.log | awk '{print "   GPU one pass us", $4}'
}
rm -rf ~/.nv ~/.cache/nvidia
for i in 1 2 3; do one A$i __GL_SHADER_DISK_CACHE=0 -- --warmup 1; done | tee $R/a.txt
rm -rf ~/.nv ~/.cache/nvidia
for i in 1 2 3; do one B$i X=1 -- --warmup 1; done | tee $R/b.txt
for i in 1 2; do one C$i __GL_SHADER_DISK_CACHE=0 -- --warmup 4; done | tee $R/c.txt
for i in 1 2; do one D$i __GL_SHADER_DISK_CACHE=0 -- --warmup 1 --profile-prefill=3; done | tee $R/d.txt
ls -la ~/.nv ~/.cache/nvidia 2>&1 | head -5 | tee $R/cache.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
