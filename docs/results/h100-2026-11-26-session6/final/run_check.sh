for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
python3 bench/baselines/qwen_check.py --wgfuse dist/wgfuse-linux-x64/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qwen --models $MODELS --dtypes f32,f16,bf16 --json $OUT/check_$TAG.json > $OUT/check_$TAG.md 2>$OUT/check_$TAG.log; echo "check rc=$?"; cat $OUT/check_$TAG.md; grep -B2 -A8 Traceback $OUT/check_$TAG.log | head -30
