# Final tiny + sim checks of session 4 (merged tree).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
W=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/ts; mkdir -p $R
gunzip -c .carry/h_tinyseq/B.gz >/tmp/B; chmod +x /tmp/B
M="--d 64 --layers 4 --heads 2 --tokens 64"
s() { grep -E "^(eager|batched|layer|single) " "$1" | awk '{printf "    %-8s %12s tok/s %8s gpu_ms\n",$1,$2,$5}'; grep -E "single_over_(eager|batched) " "$1" | tr -s ' ' | tr '\n' ' '; echo; }
timeout 60 /tmp/B tiny $M --mode single --repeats 5 --check > $R/B-single.txt 2>&1; echo "B single:"; s $R/B-single.txt
timeout 60 $W tiny $M --mode single --repeats 5 --check > $R/head-single.txt 2>&1; echo "head single:"; s $R/head-single.txt
for i in 1 2 3; do timeout 90 $W tiny $M --check --repeats 3 --json $R/all-$i.json > $R/all-$i.txt 2>&1; echo "all $i rc=$?"; s $R/all-$i.txt; done
timeout 60 $W tiny $M --sequences 16384 --mode single --repeats 3 --check --json $R/many.json > $R/many.txt 2>&1; tail -3 $R/many.txt
export PYTHONUNBUFFERED=1
OUT=$R/torch WGFUSE=$W SEQUENCES=1 MODES=eager,graph,compile_graph REPS=5 timeout 150 bench/baselines/run_tiny.sh > $R/torch.txt 2>&1; echo "torch rc=$?"; grep -E "^\|" $R/torch.txt | tail -8
timeout 60 $W tiny --sweep --sweep-d 64 --sweep-layers 4 --heads 2 --tokens 64 --sweep-sequences 1,132,1056,2112,4224,16384,29000 --mode single --repeats 3 --check --json $R/many-sweep.json > $R/many-sweep.txt 2>&1; echo "sweep rc=$?"; tail -10 $R/many-sweep.txt
k() { local n=$1; shift; timeout 60 $W --adapter gpu sim "$@" --generations 30 --quiet --json $R/$n.json > $R/$n.txt 2>&1
  echo "$n rc=$? $(python3 -c "import json;j=json.load(open('$R/$n.json'));print('team',j['team'],[(m,round(v['gen_per_s']['median'],1),'eval',v['gpu_evaluation_ms'] and round(v['gpu_evaluation_ms']['median'],4)) for m,v in j['modes'].items()])" 2>/dev/null)"; }
k market_fused market --mode fused --check; k market_team4 market --mode team --team 4; k market_auto market; k market_auto_65536 market --pop 65536
k acrobot_auto acrobot
(cd $OUT && tar czf ts.tgz ts)
# 0.5B decode again (the first final run's wall clock scattered 738-974 while its GPU time per step held at 914 us).
R=$OUT/llm2; mkdir -p $R
OUT=$R/q SIZES=0.5b DTYPES=f16 STAGES="check" TOKENIZER_DIR=.carry/tok timeout 200 bench/baselines/run_qwen.sh > $R/check.log 2>&1; grep -c "| pass" $R/check.log
M=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-* | head -1); P=$(seq -s, 1000 1015)
for k in 8 16; do for i in 1 2 3 4 5; do nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader > $R/clk-$k-$i.txt
  timeout 60 $W generate -m $M --prompt-ids $P -n 128 --temp 0 --warmup 64 --steps-per-submit $k --json $R/k$k-$i.json >/dev/null 2>$R/k$k-$i.log; echo "K $k run $i: $(tail -1 $R/k$k-$i.log | grep -o 'decode [0-9.]* tok/s') (clocks before: $(cat $R/clk-$k-$i.txt))"; done; done
for i in 1 2 3; do timeout 90 $W generate -m $M --prompt-ids "$(seq -s, 1000 4999)" -n 64 --ctx 4096 --temp 0 --warmup 64 --json $R/long-$i.json >/dev/null 2>$R/long-$i.log; echo "long 4000 $i: $(tail -1 $R/long-$i.log | grep -o 'decode [0-9.]* tok/s')"; done
cd $OUT && tar czf llm2.tgz llm2
