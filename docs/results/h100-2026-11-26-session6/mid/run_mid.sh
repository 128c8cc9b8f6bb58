for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
for d in main-3abdacb wformat arch; do cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/$d/; done
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
cp .baseline/qc.py bench/baselines/qc.py
export PYTHONUNBUFFERED=1
# correctness: wformat (f16 + bf16 storage) and arch (f32, f16) on 0.5b; builds both folders
python3 bench/baselines/qc.py --wgfuse .baseline/wformat/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qwen --sizes 0.5b,1.5b --dtypes bf16,f16 --json $OUT/qc_wformat.json > $OUT/qc_wformat.md 2>$OUT/qc_wformat.log; echo "wformat check rc=$?"; cat $OUT/qc_wformat.md
python3 bench/baselines/qc.py --wgfuse .baseline/arch/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qwen --sizes 0.5b --dtypes f32,f16 --json $OUT/qc_arch.json > $OUT/qc_arch.md 2>$OUT/qc_arch.log; echo "arch check rc=$?"; cat $OUT/qc_arch.md
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/ab A=.baseline/main-3abdacb/wgfuse B=.baseline/wformat/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=f16 B_DTYPES=f16,bf16 REPS=3 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
OUT=$OUT/ab2 A=.baseline/main-3abdacb/wgfuse B=.baseline/arch/wgfuse MODELS="0.5b=$M5" A_DTYPES=f16 B_DTYPES=f16 REPS=3 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab2/ab.md
cd $OUT && tar czf runs.tgz ab ab2 qc_*.log && rm -rf ab/ab ab2/ab
