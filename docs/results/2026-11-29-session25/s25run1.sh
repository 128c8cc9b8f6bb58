# Session 25 run 1: does 'release' (stores as atomicExchange whose old values the arrival waits on) stop
# the persistent decoder's stale read where a cold driver compile provokes it (session 24 run 6: main
# failed 2 of 38)? Every process compiles its kernels afresh (a fresh NVIDIA shader cache directory of
# its own); 4 workers at once, each alternating main's default variant and release's. 0.5B f16, 32
# tokens all checked against the step decoder. A failing run's cache directory is kept.
BUNDLE=bundle6.txz source .baseline/s24/common.sh
R=$OUT; S=/tmp/s7; mkdir -p $S
M5=$(build 0.5b); echo "built $M5 $(date +%T)" | tee -a $R/cold.txt
one() {  # worker, index, label, binary, extra
  local d=/tmp/glc-$1-$2-$3 t0=$(date +%s.%N)
  __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=$d timeout 90 dist-$4/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 32 --temp 0 --ctx 512 --decode persistent --decode-check 32 $5 --json $S/$1-$2-$3.json > /dev/null 2>$S/$1-$2-$3.log || echo "$1-$2-$3 exit $?" >> $R/cold.txt
  local line=$(python3 -c "import json; d=json.load(open('$S/$1-$2-$3.json')); x=d.get('decode',{}); print(x.get('mode'), x.get('variant'), 'load', round(d['load_ms']/1e3,2), (x.get('fallback_reason') or '')[:200])" 2>&1)
  echo "$3 w$1 $2 $line wall $(python3 -c "print(round($(date +%s.%N)-$t0,1))")" >> $R/cold.txt
  case "$line" in persistent*) [ "$1-$2" = 0-0 ] && tar czf $R/pass-$3.tgz -C /tmp $(basename $d) 2>/dev/null; rm -rf $d ;;
    *) [ $(ls $R | wc -l) -lt 8 ] && tar czf $R/fail-$1-$2-$3.tgz -C /tmp $(basename $d) $S/$1-$2-$3.log 2>/dev/null ;; esac
}
T0=$(date +%s)
worker() { for i in $(seq 0 200); do
  [ $(( $(date +%s) - T0 )) -gt 530 ] && break
  if [ $(( (i + $1) % 2 )) = 0 ]; then one $1 $i default m ""; one $1 $i release r "--persistent-variant split+down=4+rounds=4+ahead+release"
  else one $1 $i release r "--persistent-variant split+down=4+rounds=4+ahead+release"; one $1 $i default m ""; fi
done; }
for w in 0 1 2 3; do worker $w & done; wait
