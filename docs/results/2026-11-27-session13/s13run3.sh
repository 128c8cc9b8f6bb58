# Session 13 run 3: xreg_totals for gate/up and the LM head (prefetching the next block) against main 3cd5e1c, same call.
BUNDLE=bundle3.tgz source .baseline/s13/common.sh
R=$OUT/r3; mkdir -p $R
M15=$(build 1.5b)
G="--prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
# par DIST MODEL [generate args]; environment from E
par() { local d=$1 m=$2; shift 2; echo "$d $(basename $m) $E $*: $(env $E timeout 90 $d/wgfuse-linux-x64/wgfuse generate -m $m $G --parallel 8 "$@" 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s|^parallel.*|rror.*' | tr '\n' ' ' | cut -c1-260)"; }
E=X=1
for rep in 1 2 3; do par dist-main $M5; par dist $M5; done | tee $R/ab05.txt
for g in 264 396 768; do E=WGFUSE_XREG_GROUPS=$g par dist $M5; done | tee $R/groups.txt
for rep in 1 2; do par dist-main $M15; par dist $M15; done | tee $R/ab15.txt
for rep in 1 2; do par dist-main $M5 --dtype q8_0; par dist $M5 --dtype q8_0; done | tee $R/q8.txt
timeout 60 dist/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile.txt >/dev/null
timeout 60 dist-main/wgfuse-linux-x64/wgfuse generate -m $M5 $G --parallel 8 --profile=3 2>$R/b8-profile-main.txt >/dev/null
grep -E "rows|one pass" $R/b8-profile*.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
