# attn helper, run 2: main's split path (--fusion none) as the baseline, then 1.5B.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
A=.carry/h_attn/wgfuse; B=dist/wgfuse-linux-x64/wgfuse
R=$OUT/attn2; mkdir -p $R/x
t0=$(date +%s)
timeout 60 python3 -c "import sys; from pathlib import Path; sys.path.insert(0, 'bench/baselines'); import qwen_check as q; q.build_model('0.5b', Path('/tmp/qwen'), Path('.carry/tok'), 20261122)" 2>&1 | tail -1
echo "0.5b folder at $(( $(date +%s) - t0 )) s"
P=$(seq -s, 1000 1015); L=$(seq -s, 1000 4999)
g() { local name=$1 bin=$2; shift 2; timeout 45 $bin generate -m $M --temp 0 "$@" --json $R/x/$name.json >/dev/null 2>$R/x/$name.log; echo "$name rc $?: $(tail -1 $R/x/$name.log | grep -o 'decode [0-9.]* tok/s, [0-9.]* dispatches')"; }
prof() { sed -n '/^decode step at/,$p' $R/x/$1.log | grep -v "^embed\|^argmax\|^sum" | cut -c1-100; }
M=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-* | head -1)
for i in 1 2 3; do g main-none-$i $B --prompt-ids $P -n 128 --warmup 64 --fusion none; g new-$i $A --prompt-ids $P -n 128 --warmup 64; done
g long-main-none $B --prompt-ids "$L" -n 64 --ctx 4096 --warmup 64 --fusion none
g long-new $A --prompt-ids "$L" -n 64 --ctx 4096 --warmup 64
g prof-main-none $B --prompt-ids $P -n 128 --fusion none --profile=5; prof prof-main-none
g lprof-main-none $B --prompt-ids "$L" -n 8 --ctx 4096 --fusion none --profile=3; prof lprof-main-none
echo "0.5b done at $(( $(date +%s) - t0 )) s"
(cd $OUT && tar czf attn2.tgz attn2)
timeout 110 python3 bench/baselines/qwen_check.py --wgfuse $A --tokenizer-dir .carry/tok --out /tmp/qwen --sizes 1.5b --dtypes f16 --json $R/qwen_check_1.5b.json > $R/qwen_check_1.5b.log 2>&1; echo "check rc $?"; grep "| pass\|fail\|FAIL\|rror" $R/qwen_check_1.5b.log | tail -6
echo "1.5b check at $(( $(date +%s) - t0 )) s"
M=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-* | head -1)
for i in 1 2; do g b-main-none-$i $B --prompt-ids $P -n 128 --warmup 64 --fusion none; g b-new-$i $A --prompt-ids $P -n 128 --warmup 64; done
g b-prof-new $A --prompt-ids $P -n 128 --profile=5; prof b-prof-new
g b-long-new $A --prompt-ids "$L" -n 32 --ctx 4096 --warmup 16
g b-long-main-none $B --prompt-ids "$L" -n 32 --ctx 4096 --warmup 16 --fusion none
echo "all done at $(( $(date +%s) - t0 )) s"
(cd $OUT && tar czf attn2.tgz attn2 && rm -rf attn2)
