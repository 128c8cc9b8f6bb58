# Session 4, last call: the Qwen PyTorch baselines in the same run as wgfuse's speed (same folders, prompt, tokens),
# and the tiny width sweep with the final kernel.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
W=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/b; mkdir -p $R/tiny
timeout 150 $W tiny --sweep --repeats 2 --check --json $R/tiny/tiny-sweep.json > $R/tiny/tiny-sweep.txt 2>&1; echo "tiny sweep rc=$?"; tail -25 $R/tiny/tiny-sweep.txt
OUT=$R/q SIZES=0.5b,1.5b DTYPES=f16 KS=8 REPS=3 STAGES="check speed baselines" BASELINE_MODES=eager,graph,hf,cublas TOKENIZER_DIR=.carry/tok timeout 330 bench/baselines/run_qwen.sh > $R/qwen.log 2>&1; echo "qwen rc=$?"
grep -c "| pass" $R/qwen.log; cat $R/q/speed.md; cat $R/q/baselines.md
for m in batched single; do timeout 45 $W tiny --sweep --sweep-d 3072 --tokens 2 --repeats 1 --mode $m --json $R/tiny/tiny-wide-$m.json > $R/tiny/tiny-wide-$m.txt 2>&1; tail -2 $R/tiny/tiny-wide-$m.txt; done
cd $OUT && tar czf b.tgz b
