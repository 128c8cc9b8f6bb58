# session 10 run 6: flash helper's tiled prefill attention A/B (base = main 53bde0c's dist "new"); GPTQ 8-bit folders against transformers; AWQ decode rate
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
tar xzf .baseline/s10/new.tgz && tar xzf .baseline/s10/flash.tgz
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); F=dist/flash/wgfuse
mkdir -p $OUT/r6
cp .baseline/s10/prefill_sweep_flash.sh bench/baselines/prefill_sweep.sh; cp .baseline/s10/prefill_bench_flash.sh bench/baselines/prefill_bench.sh
WGFUSE=$F BASE_WGFUSE=dist/new/wgfuse MODEL=$M5 OUT=$OUT/r6/pf TOKENIZER_DIR=/tmp/tok timeout 330 bench/baselines/prefill_sweep.sh > $OUT/r6/pf.log 2>&1; echo "prefill rc=$?"
head -14 $OUT/r6/pf/prefill.md; grep -h "attend\|attention\|one pass" $OUT/r6/pf/profile/*4000.log
timeout 200 python3 bench/baselines/hf_quant_check.py --wgfuse $F --tokenizer-dir /tmp/tok --out /tmp/hfq --models 0.5b --formats gptq-int8,awq --json $OUT/r6/hf_quant.json > $OUT/r6/hf_quant.log 2>&1; echo "hf_quant rc=$?"
grep -vE "Loading weights" $OUT/r6/hf_quant.log | grep -E "^\|" | head -14
for q in gptq-int8 awq; do d=$(ls -d /tmp/hfq/*-$q 2>/dev/null | head -1); [ -n "$d" ] || continue
  for rep in 1 2; do echo -n "$q rep$rep: "; timeout 60 $F generate -m $d --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 2>&1 >/dev/null | grep -oE "decode [0-9.]+ tok/s.*GPU memory [0-9.]+ MB|[0-9.]+ MB of them read per token"; done; done 2>&1 | tee $OUT/r6/quant_decode.txt
for rep in 1 2; do echo -n "f16 rep$rep: "; timeout 60 $F generate -m $M5 --dtype f16 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 2>&1 >/dev/null | grep -oE "decode [0-9.]+ tok/s"; done 2>&1 | tee -a $OUT/r6/quant_decode.txt
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
