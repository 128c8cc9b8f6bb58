# Session 25 run 3 (run 2 again, its decode calls fixed: they named the binaries wrongly): the tagged live words (t: every word another workgroup reads carries its write's
# parity; readers re-read until it matches) against main (m). 0.5B f16 and q8_0, 1.5B bf16: decode
# tok/s interleaved, logits against main's and the step decoder's, the stale reads each run counted;
# then cold driver compiles (a fresh NVIDIA shader cache a process, 4 at once) of t, 32 tokens checked,
# until the time is up: how often a reader met a stale word, and whether any check failed.
START=$(date +%s); BUNDLE=bundle7.txz source .baseline/s24/common.sh
R=$OUT/r9; mkdir -p $R; S=/tmp/s9; mkdir -p $S
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $M5 $M15 $(date +%T)" | tee -a $R/decode.txt
stale() { python3 -c "import json; d=json.load(open('$R/$1-$2.json')); print('  stale_reads', d['decode'].get('stale_reads'))"; }
for rep in 1 2 3; do
  for b in m t; do for dt in f16 q8_0; do
    dec $b-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8" | tee -a $R/decode.txt
    [ $b = t ] && stale $b-$dt $rep | tee -a $R/decode.txt
  done; done
done
for rep in 1 2; do for b in m t; do
  dec $b-15 dist-$b $M15 16 128 $rep "--dtype bf16 --decode persistent --decode-check 8" | tee -a $R/decode.txt
done; done
for b in m t; do logits L$b dist-$b $M5 "--decode persistent --decode-check 0"; done
logits Ls dist-m $M5 ""
{ cmp Lt Lm; cmp Lt Ls; cmp Lm Ls; } | tee -a $R/decode.txt
dec t-long dist-t $M5 4000 90 1 "--decode persistent --decode-check 8" | tee -a $R/decode.txt
dec m-long dist-m $M5 4000 90 1 "--decode persistent --decode-check 8" | tee -a $R/decode.txt
echo "cold start $(date +%T)" | tee -a $R/decode.txt
T0=$(date +%s)
worker() { for i in $(seq 0 200); do
  [ $(( $(date +%s) - T0 )) -gt $1 ] && break
  local n=$2-$i
  __GL_SHADER_DISK_CACHE=0 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc-$n timeout 90 dist-t/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 32 --temp 0 --ctx 512 --decode persistent --decode-check 32 --json $S/$n.json > /dev/null 2>$S/$n.log || echo "cold $n exit $?" >> $R/cold.txt
  python3 -c "import json; d=json.load(open('$S/$n.json')); x=d.get('decode',{}); print('cold $n', x.get('mode'), 'stale_reads', x.get('stale_reads'), 'load', round(d['load_ms']/1e3,2), round(d['decode_tok_s'],1), (x.get('fallback_reason') or '')[:200])" >> $R/cold.txt 2>&1
done; }
LEFT=$(( 400 - $(date +%s) + START ))
for w in 0 1 2 3; do worker $LEFT $w & done; wait
grep -c persistent $R/cold.txt; awk '$5 != 0' $R/cold.txt | head -20
