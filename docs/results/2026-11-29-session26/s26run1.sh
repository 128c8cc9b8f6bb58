# Session 26 run 1 (prepared in session 25): branch tags-latency (l: the tags' checks after every load
# of a stage; stale reads by region) against main fee440f (m: the tags as measured in session 25 run 3,
# 12-16% behind the untagged decoder). Predicted: l recovers most of the ~124 us a token at 0.5B f16
# (m ~1,243 tok/s, untagged ~1,467 on the H200). Then l under the cold-compile stress, counting where
# the stale reads are. Files go to /tmp; text lines to $OUT (the .npy logits would be too large).
START=$(date +%s); BUNDLE=bundle10.txz source .baseline/s24/common.sh
R=/tmp/r10; mkdir -p $R; S=/tmp/s10; mkdir -p $S; O=$OUT/decode.txt
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $M5 $M15 $(date +%T)" | tee -a $O
stale() { python3 -c "import json; d=json.load(open('$R/$1-$2.json'))['decode']; print('  stale', d.get('stale_reads'), d.get('stale_reads_by_region'))"; }
for rep in 1 2 3; do
  for b in m l; do for dt in f16 q8_0; do
    dec $b-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8" | tee -a $O; stale $b-$dt $rep | tee -a $O
  done; done
done
for rep in 1 2; do for b in m l; do
  dec $b-15 dist-$b $M15 16 128 $rep "--dtype bf16 --decode persistent --decode-check 8" | tee -a $O
done; done
for b in m l; do logits L$b dist-$b $M5 "--decode persistent --decode-check 0"; done
logits Ls dist-m $M5 ""
{ cmp Ll Lm; cmp Ll Ls; } | tee -a $O
dec l-long dist-l $M5 4000 90 1 "--decode persistent --decode-check 8" | tee -a $O
dec m-long dist-m $M5 4000 90 1 "--decode persistent --decode-check 8" | tee -a $O
dec s-f16 dist-m $M5 16 128 1 "--dtype f16" | tee -a $O
echo "cold start $(date +%T)" | tee -a $O
T0=$(date +%s)
worker() { for i in $(seq 0 200); do
  [ $(( $(date +%s) - T0 )) -gt $1 ] && break
  local n=$2-$i
  __GL_SHADER_DISK_CACHE=0 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc-$n timeout 90 dist-l/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 32 --temp 0 --ctx 512 --decode persistent --decode-check 32 --json $S/$n.json > /dev/null 2>$S/$n.log || echo "cold $n exit $?" >> $OUT/cold.txt
  python3 -c "import json; d=json.load(open('$S/$n.json')); x=d.get('decode',{}); print('cold $n', x.get('mode'), 'stale_reads', x.get('stale_reads'), x.get('stale_reads_by_region'), 'load', round(d['load_ms']/1e3,2), round(d['decode_tok_s'],1), (x.get('fallback_reason') or '')[:200])" >> $OUT/cold.txt 2>&1
done; }
LEFT=$(( 560 - $(date +%s) + START ))
for w in 0 1 2 3; do worker $LEFT $w & done; wait
grep -c persistent $OUT/cold.txt; grep -v "stale_reads 0 " $OUT/cold.txt | head -20
