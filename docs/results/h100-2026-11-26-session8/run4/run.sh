# session 8 run 4: persistent decoder experiments (WGFUSE_EXPERIMENT bits: 1 attention with loads in flight, 2 o_proj/down epilogue without the residual load (wrong tokens, timing only), 4 workgroups without units skip add_product)
. .baseline/setup_dev.sh
mkdir -p /tmp/exp && gunzip -c .baseline/exp/wgfuse.gz > /tmp/exp/wgfuse && chmod +x /tmp/exp/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so /tmp/exp/
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*)
mkdir -p $OUT/r4; P=$(seq -s, 1000 1015)
for r in 1 2; do for e in 0 1 2 4 5; do chk=8; [ $e = 2 ] && chk=0
  WGFUSE_EXPERIMENT=$e /tmp/exp/wgfuse generate -m $M5 --prompt-ids $P -n 128 --temp 0 --warmup 64 --decode persistent --decode-check $chk --json $OUT/r4/exp$e-$r.json > $OUT/r4/exp$e-$r.txt 2>&1
  echo "exp $e run $r rc=$? $(grep -o '"decode_tok_s": [0-9.]*' $OUT/r4/exp$e-$r.json) $(tail -1 $OUT/r4/exp$e-$r.txt | cut -c1-150)"
done; done
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
