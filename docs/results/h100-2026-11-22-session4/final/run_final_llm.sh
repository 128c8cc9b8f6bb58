# Final LLM run of session 4 (merged tree): check both sizes against transformers, speed (3 runs f16 both sizes,
# 1 run f32 0.5B), profiles, long context, prefill.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
W=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/llm; mkdir -p $R
OUT=$R/q SIZES=0.5b,1.5b DTYPES=f16,f32 STAGES="check" TOKENIZER_DIR=.carry/tok timeout 300 bench/baselines/run_qwen.sh > $R/check.log 2>&1; grep "| pass\|fail\|FAIL\|rror" $R/check.log | tail -12
P=$(seq -s, 1000 1015)
for size in 0.5b 1.5b; do M=$(ls -d /tmp/qwen/qwen2.5-$size-random-* | head -1)
  for dt in f16 f32; do reps="1 2 3"; [ $dt = f32 ] && reps=1
    for i in $reps; do timeout 60 $W generate -m $M --prompt-ids $P -n 128 --temp 0 --warmup 64 --dtype $dt --json $R/$size-$dt-$i.json >/dev/null 2>$R/$size-$dt-$i.log; echo "$size $dt $i: $(tail -1 $R/$size-$dt-$i.log | grep -o 'decode [0-9.]* tok/s.*token,')"; done; done
  timeout 60 $W generate -m $M --prompt-ids $P -n 128 --temp 0 --profile=5 --json $R/profile-$size.json >/dev/null 2>$R/profile-$size.log; sed -n '/^decode step at/,$p' $R/profile-$size.log
done
M=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-* | head -1)
for i in 1 2; do timeout 90 $W generate -m $M --prompt-ids "$(seq -s, 1000 4999)" -n 64 --ctx 4096 --temp 0 --warmup 64 --json $R/long-$i.json >/dev/null 2>$R/long-$i.log; echo "long 4000 $i: $(tail -1 $R/long-$i.log | grep -o 'decode [0-9.]* tok/s')"; done
for i in 1 2 3; do timeout 60 $W generate -m $M --prompt-ids "$(seq -s, 1000 1511)" -n 1 --warmup 1 --json $R/prefill-$i.json >/dev/null 2>$R/prefill-$i.log; echo "prefill 512 $i: $(tail -1 $R/prefill-$i.log | grep -o 'prefill [0-9.]* tok/s')"; done
cd $OUT && tar czf llm.tgz llm
