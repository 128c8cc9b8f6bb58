# session 8 run 5: persistent decoder, new attention + idle workgroups skip every product loop (EXP=5), by workgroup size and grid
. .baseline/setup_dev.sh
mkdir -p /tmp/exp && gunzip -c .baseline/exp/wgfuse.gz > /tmp/exp/wgfuse && chmod +x /tmp/exp/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/exp/
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r5; P=$(seq -s, 1000 1015)
for r in 1 2; do for cfg in 256:0 256:132 512:132 512:264 1024:132; do wg=${cfg%%:*}; g=${cfg#*:}
  WGFUSE_EXPERIMENT=5 WGFUSE_EXPERIMENT_WG=$wg /tmp/exp/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --persistent-wg $g --decode-check 8 --json $OUT/r5/wg$wg-g$g-$r.json > $OUT/r5/wg$wg-g$g-$r.txt 2>&1
  echo "wg $wg groups $g run $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r5/wg$wg-g$g-$r.json) $(grep -i 'cannot\|error' $OUT/r5/wg$wg-g$g-$r.txt | head -2)"
done; done
/tmp/exp/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --json $OUT/r5/steps.json > $OUT/r5/steps.txt 2>&1; echo "steps $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r5/steps.json)"
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
