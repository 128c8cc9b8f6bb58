for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/arch/
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
cp .baseline/arch/qwen_check.py bench/baselines/qc3.py
export PYTHONUNBUFFERED=1
python3 bench/baselines/qc3.py --wgfuse .baseline/arch/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qwen --models qwen3-0.6b,llama3.2-1b,smollm2-360m,qwen3-1.7b --dtypes f32,f16 --json $OUT/qc3.json > $OUT/qc3.md 2>$OUT/qc3.log; echo "check rc=$?"; cat $OUT/qc3.md; grep -i "error\|Traceback" -A5 $OUT/qc3.log | head -40
