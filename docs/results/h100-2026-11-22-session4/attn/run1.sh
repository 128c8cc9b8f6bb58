# attn helper: decode attention + small products, on the H100. SIZE (0.5b | 1.5b).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
A=.carry/h_attn/wgfuse; B=dist/wgfuse-linux-x64/wgfuse
SIZE=${SIZE:-0.5b}
R=$OUT/attn-$SIZE; mkdir -p $R/x
t0=$(date +%s)
OUT=$R/q SIZES=$SIZE DTYPES=f16 STAGES=check TOKENIZER_DIR=.carry/tok WGFUSE=$A timeout 130 bench/baselines/run_qwen.sh 2>&1 | grep "| pass\|fail\|FAIL\|rror" | tail -12
echo "check done at $(( $(date +%s) - t0 )) s"
M=$(ls -d /tmp/qwen/qwen2.5-$SIZE-random-* | head -1)
P=$(seq -s, 1000 1015); L=$(seq -s, 1000 4999); H=$(seq -s, 1000 1447)
g() { local name=$1 bin=$2; shift 2; timeout 45 $bin generate -m $M --temp 0 "$@" --json $R/x/$name.json >/dev/null 2>$R/x/$name.log; echo "$name rc $?: $(tail -1 $R/x/$name.log | grep -o 'decode [0-9.]* tok/s, [0-9.]* dispatches')"; }
for i in 1 2 3; do
  g main-$i $B --prompt-ids $P -n 128 --warmup 64
  g new-$i $A --prompt-ids $P -n 128 --warmup 64
  g new0-$i $A --prompt-ids $P -n 128 --warmup 64 --attn-short-max 0
done
echo "short done at $(( $(date +%s) - t0 )) s"
for b in main:$B new:$A; do n=${b%%:*}; g long-$n ${b#*:} --prompt-ids "$L" -n 64 --ctx 4096 --warmup 64; done
g long-new0 $A --prompt-ids "$L" -n 64 --ctx 4096 --warmup 64 --attn-short-max 0
for b in main:$B new:$A; do n=${b%%:*}; g prof-$n ${b#*:} --prompt-ids $P -n 128 --profile=5; sed -n '/^decode step at/,$p' $R/x/prof-$n.log | cut -c1-110; done
echo "profiles done at $(( $(date +%s) - t0 )) s"
for v in main:$B: new:$A: new0:$A:--attn-short-max=0; do n=${v%%:*}; r=${v#*:}; g mid-$n ${r%%:*} --prompt-ids "$H" -n 60 --warmup 0 ${r#*:}; done
for b in main:$B new:$A; do n=${b%%:*}; g lprof-$n ${b#*:} --prompt-ids "$L" -n 8 --ctx 4096 --profile=3; sed -n '/^decode step at/,$p' $R/x/lprof-$n.log | grep -i "attention\|o_proj\|qkv\|one pass\|total" | cut -c1-110; done
echo "all done at $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf attn-$SIZE.tgz attn-$SIZE
