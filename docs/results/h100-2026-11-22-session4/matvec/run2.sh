# matvec helper, run 2: qwen_check f16 (1.5B first), decode tok/s mine vs main --fusion none (same split path, old matvec), profiles, f32.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_matvec; MINE=$H/wgfuse; MAIN=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/r2; mkdir -p $R/x /tmp/qwen
END=$((SECONDS+${BUDGET:-222}))
left() { local l=$(( END - SECONDS )); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
timeout $(left 105) python3 bench/baselines/qwen_check.py --wgfuse $MINE --tokenizer-dir .carry/tok --out /tmp/qwen --sizes 1.5b,0.5b --dtypes f16 --json $R/qwen_check.json > $R/qwen_check.log 2>&1
echo "check rc $?"; grep -E "\] (pass|FAIL|fail)" $R/qwen_check.log | cut -c1-110
P=$(seq -s, 1000 1015)
gen() { # size label binary args...
  local size=$1 n=$2 b=$3; shift 3; M=$(ls -d /tmp/qwen/qwen2.5-$size-random-* | head -1)
  timeout $(left 30) $b generate -m $M --prompt-ids $P -n 128 --temp 0 --warmup 64 "$@" --json $R/x/$size-$n-$SECONDS.json >/dev/null 2>$R/x/$size-$n.log
  echo "$size $n: $(tail -1 $R/x/$size-$n.log | grep -o 'decode [0-9.]* tok/s.*dispatches/token')"; }
for size in 1.5b 0.5b; do for i in 1 2 3; do gen $size mine $MINE; gen $size main $MAIN --fusion none; done; done
for size in 1.5b 0.5b; do
  gen $size prof-mine $MINE --profile=5; sed -n '/^decode step at/,$p' $R/x/$size-prof-mine.log | grep -v "^attention\|^embed\|^argmax\|^sum"
done
for size in 1.5b 0.5b; do
  gen $size prof-main $MAIN --fusion none --profile=5; sed -n '/^decode step at/,$p' $R/x/$size-prof-main.log | grep "gate_up\|down\|one pass\|lm_head"
done
gen 0.5b mine-f32 $MINE --dtype f32; gen 0.5b main-f32 $MAIN --fusion none --dtype f32
cd $OUT && tar czf r2.tgz r2
