# session 11 run 1: batched product shapes swept (WGFUSE_BATCH_SHAPES, experiment build), generate --parallel 8 --profile
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s11/sweep.tgz && tar xzf .baseline/s11/main.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/sweep/wgfuse
mkdir -p $OUT/r1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/r1/gpu.txt
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8"
for cfg in base '*=32x4x1' '*=32x2x1' '*=32x1x1' '*=64x4x1' '*=64x2x1' '*=64x1x1' '*=128x4x1' '*=128x2x1' '*=128x1x1' '*=256x4x1' '*=256x2x1' '*=32x4x2' '*=64x4x2' '*=32x2x4'; do
  tag=$(echo "$cfg" | tr -d '*=')
  if [ $cfg = base ]; then unset WGFUSE_BATCH_SHAPES; else export WGFUSE_BATCH_SHAPES="$cfg"; fi
  timeout 60 $W $G --profile > $OUT/r1/p_$tag.txt 2>&1
  echo "== $cfg: $(grep -E '^parallel' $OUT/r1/p_$tag.txt | head -1)"
  grep -E "_rows|one pass" $OUT/r1/p_$tag.txt | tail -9 | awk '{print "   ", $1, $3}' | tr '\n' ' '; echo
done 2>&1 | tee $OUT/r1/summary.txt
unset WGFUSE_BATCH_SHAPES
for rep in 1 2; do echo -n "base rep$rep: "; timeout 60 $W $G 2>&1 >/dev/null | grep -E "^parallel"; echo -n "main rep$rep: "; timeout 60 dist/wgfuse-linux-x64/wgfuse $G 2>&1 >/dev/null | grep -E "^parallel"; done | tee -a $OUT/r1/summary.txt
timeout 60 dist/wgfuse-linux-x64/wgfuse $G --profile > $OUT/r1/p_main.txt 2>&1
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
