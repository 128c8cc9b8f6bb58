# Session 15 run 7 (H100): the prefill scatter, continued (see run 6). The driver's shader disk cache off in
# every line: E --warmup 16 and 64 (does a longer warm-up end it?); F -n 129 after --warmup 1 (is the decode
# that follows slow too?); G the cache on after one process filled it, for reference.
BUNDLE=bundle6.tgz source .baseline/s15/common.sh
R=$OUT/r7; mkdir -p $R
source .baseline/s15/fns.sh
one() {  # label env... -- extra args
  local label=$1; shift; local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(ids 512) --temp 0 --dtype f16 --ctx 4096 "$@" --json /tmp/r7.json > /tmp/r7.log 2>&1 || echo "$label failed"
  python3 -c "import json; j=json.load(open('/tmp/r7.json')); print('$label', 'load_ms', round(j['load_ms']), 'prefill_ms', round(j['prefill_ms'], 1), 'decode_tok_s', round(j['decode_tok_s'], 1))"
}
for w in 16 64; do one E-w$w __GL_SHADER_DISK_CACHE=0 -- -n 1 --warmup $w; done | tee $R/e.txt
for i in 1 2; do one F$i __GL_SHADER_DISK_CACHE=0 -- -n 129 --warmup 1; done | tee $R/f.txt
for i in 1 2 3; do one G$i X=1 -- -n 129 --warmup 1; done | tee $R/g.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
