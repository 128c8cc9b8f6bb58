# Session 26 run 4: the tags without a re-read loop (r = branch tags-retry: a stale word discards the
# batch, which runs again) against the tags with the loop (l = tags-latency) and no tags (u = 9edcc8f^).
# Predicted from run 2's ablation (noreread 1,368-1,391 f16, 1,265-1,278 q8_0): r ~1,380 f16, ~1,270
# q8_0, ~580 at 1.5B; l ~1,270 / ~1,165 / ~540; u ~1,490 / ~1,340 / ~645. Then r under the cold-compile
# stress (4 at once, disk cache off, 32 tokens checked against the step decoder): stale reads must
# end in batches run again, and no run may fail its check.
START=$(date +%s); BUNDLE=bundle13.txz source .baseline/s26/common.sh
R=/tmp/r13; mkdir -p $R; S=/tmp/s13; mkdir -p $S; O=$OUT/decode.txt
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)" | tee -a $O
again() { python3 -c "import json; d=json.load(open('$R/$1-$2.json'))['decode']; print('  stale', d.get('stale_reads'), d.get('stale_reads_by_region'), 'again', d.get('batches_run_again'))"; }
for rep in 1 2 3; do for dt in f16 q8_0; do for b in u l r; do
  dec $b-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8" | tee -a $O
  [ $b = r ] && again $b-$dt $rep | tee -a $O
done; done; done
for rep in 1 2; do for b in u l r; do
  dec $b-15 dist-$b $M15 16 128 $rep "--dtype bf16 --decode persistent --decode-check 8" | tee -a $O
done; done
for b in l r; do dec $b-long dist-$b $M5 4000 90 1 "--decode persistent --decode-check 8" | tee -a $O; done
logits Lr dist-r $M5 "--decode persistent --decode-check 0"; logits Ls dist-u $M5 ""
cmp Lr Ls | tee -a $O
echo "cold start $(date +%T)" | tee -a $O
T0=$(date +%s)
worker() { for i in $(seq 0 200); do
  [ $(( $(date +%s) - T0 )) -gt $1 ] && break
  local n=$2-$i
  __GL_SHADER_DISK_CACHE=0 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc-$n timeout 90 dist-r/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 32 --temp 0 --ctx 512 --decode persistent --decode-check 32 --json $S/$n.json > /dev/null 2>$S/$n.log || echo "cold $n exit $? $(tail -1 $S/$n.log)" >> $OUT/cold.txt
  python3 -c "import json; d=json.load(open('$S/$n.json')); x=d.get('decode',{}); print('cold $n', x.get('mode'), 'stale_reads', x.get('stale_reads'), x.get('stale_reads_by_region'), 'again', x.get('batches_run_again'), 'load', round(d['load_ms']/1e3,2), round(d['decode_tok_s'],1), (x.get('fallback_reason') or '')[:200])" >> $OUT/cold.txt 2>&1
done; }
LEFT=$(( 380 - $(date +%s) + START ))
for w in 0 1 2 3; do worker $LEFT $w & done; wait
echo "cold runs $(grep -c '^cold' $OUT/cold.txt), persistent $(grep -c persistent $OUT/cold.txt)" | tee -a $O
grep -v "stale_reads 0 " $OUT/cold.txt | head -30 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
