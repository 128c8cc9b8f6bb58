# session 11 run 2: tall_totals with 8 lanes a row (coalesced), no barrier before weight loads; shapes swept
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s11/sweep.tgz && tar xzf .baseline/s11/main.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/sweep/wgfuse
mkdir -p $OUT/r2
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8"
S3='qkv_rows=32x2x4,o_proj_rows=32x2x4,down_rows=32x2x4'
for cfg in base 'gate_up_rows=tall4,logits_rows=tall4' 'gate_up_rows=tall16,logits_rows=tall16' "$S3" 'qkv_rows=32x1x4,o_proj_rows=32x1x4,down_rows=32x1x4' 'qkv_rows=32x2x2,o_proj_rows=32x2x2,down_rows=32x2x2' 'qkv_rows=64x1x1,o_proj_rows=64x1x1,down_rows=64x1x1' 'gate_up_rows=32x2x4,logits_rows=32x2x4' 'down_rows=64x2x2,qkv_rows=32x2x8,o_proj_rows=32x1x2'; do
  tag=$(echo "$cfg" | tr -d '*=,_' | cut -c1-40)
  if [ "$cfg" = base ]; then unset WGFUSE_BATCH_SHAPES; else export WGFUSE_BATCH_SHAPES="$cfg"; fi
  timeout 60 $W $G --profile > $OUT/r2/p_$tag.txt 2>&1
  echo "== $cfg: $(grep -E '^parallel' $OUT/r2/p_$tag.txt | head -1)"
  grep -E "_rows|one pass" $OUT/r2/p_$tag.txt | tail -9 | awk '{print "   ", $1, $3, $4}' | tr '\n' ' '; echo
done 2>&1 | tee $OUT/r2/summary.txt
unset WGFUSE_BATCH_SHAPES
for rep in 1 2; do echo -n "base rep$rep: "; timeout 60 $W $G 2>&1 >/dev/null | grep -E "^parallel"; echo -n "main rep$rep: "; timeout 60 dist/wgfuse-linux-x64/wgfuse $G 2>&1 >/dev/null | grep -E "^parallel"; done | tee -a $OUT/r2/summary.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
