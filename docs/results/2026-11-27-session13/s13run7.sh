# Session 13 run 7 (H100): main b934db1's build (xreg_totals; attend_rows at 256 threads) against main 3cd5e1c in the same call:
# generate --parallel 8 (0.5B f16 / q8_0, 1.5B, 2,000 positions), odd slot counts checked, the batched step's profile, then served (serve_ab.sh).
BUNDLE=bundle7.tgz source .baseline/s13/common.sh
R=$OUT/r7; mkdir -p $R
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
par() { local d=$1 m=$2; shift 2; echo "$d $(basename $m) $*: $(timeout 90 $d/wgfuse-linux-x64/wgfuse generate -m $m $G "$@" 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s|^parallel.*|rror.*' | tr '\n' ' ' | cut -c1-260)"; }
for rep in 1 2 3; do par dist-main $M5 --parallel 8; par dist $M5 --parallel 8; done | tee $R/ab05.txt
M15=$(build 1.5b)
for d in dist-main dist; do par $d $M15 --parallel 8; done | tee $R/ab15.txt
for p in 3 5 6; do par dist $M5 --parallel $p; done | tee $R/slots.txt
for rep in 1 2; do par dist-main $M5 --parallel 8 --dtype q8_0; par dist $M5 --parallel 8 --dtype q8_0; done | tee $R/q8.txt
timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile.txt >/dev/null
timeout 60 dist-main/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile-main.txt >/dev/null
grep -E "rows|one pass" $R/b8-profile*.txt
L="--prompt-ids $(seq -s, 1000 2999) -n 64 --temp 0 --warmup 16 --parallel 8"
for d in dist-main dist; do echo "$d 2000 positions: $(timeout 90 $d/wgfuse-linux-x64/wgfuse generate -m $M5 $L 2>&1 >/dev/null | grep -oE '^parallel.*|rror.*' | cut -c1-200)"; done | tee $R/long.txt
OUT=$R/serve FOLDER=$M5 BUILDS="main=dist-main/wgfuse-linux-x64 this=dist/wgfuse-linux-x64" ROUNDS=2 JOIN_WORDS=0 timeout 420 bench/baselines/serve_ab.sh 2>&1 | tail -40 | tee $R/serve_ab.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
