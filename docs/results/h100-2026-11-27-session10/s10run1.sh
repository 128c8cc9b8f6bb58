# session 10 run 1: prefill branch (chunk 4096 + 8x8 tiles) vs main; batched and single decode profiles on main; hf_quant_check (AWQ/GPTQ) on the GPU
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
set -x
tar xzf .baseline/s10/main.tgz && tar xzf .baseline/s10/prefill.tgz   # dist/wgfuse-linux-x64 (main), dist/prefill
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
set +x
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); W=dist/wgfuse-linux-x64/wgfuse; P=dist/prefill/wgfuse
mkdir -p $OUT/r1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/r1/gpu.txt
# decode profiles (main): single stream, then 8 slots batched
timeout 60 $W generate -m $M5 --prompt-ids $(seq -s, 1000 1142) -n 32 --temp 0 --profile=10 > $OUT/r1/profile_single.txt 2>&1
timeout 90 $W generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --parallel 8 --profile > $OUT/r1/profile_p8.txt 2>&1
grep -E "^parallel|decode|one pass" $OUT/r1/profile_p8.txt | head
# prefill: main (chunk 512), main --prefill-chunk 4096, prefill branch (4096 + 8x8 tiles)
cp .baseline/s10/prefill_bench.sh .baseline/s10/prefill_sweep.sh bench/baselines/
VARIANTS="main:$W:;main4096:$W:--prefill-chunk 4096;prefill:$P:" MODEL=$M5 OUT=$OUT/r1/pf TOKENIZER_DIR=/tmp/tok timeout 330 bench/baselines/prefill_bench.sh > $OUT/r1/pf.log 2>&1; echo "prefill rc=$?"
head -14 $OUT/r1/pf/prefill.md
# AWQ/GPTQ folders against transformers
timeout 240 python3 bench/baselines/hf_quant_check.py --wgfuse $W --tokenizer-dir /tmp/tok --out /tmp/hfq --models 0.5b --formats awq,gptq,gptq-v2-asym --json $OUT/r1/hf_quant.json > $OUT/r1/hf_quant.log 2>&1; echo "hf_quant rc=$?"
tail -15 $OUT/r1/hf_quant.log
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
