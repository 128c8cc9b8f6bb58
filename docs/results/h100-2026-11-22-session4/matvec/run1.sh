# matvec helper, run 1: correctness (qwen_check), decode tok/s mine vs main, profile, kernel bench.
set -u
for f in .gl/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
H=.carry/h_matvec; MINE=$H/wgfuse; MAIN=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/r1; mkdir -p $R/x
END=$((SECONDS+${BUDGET:-225}))
left() { echo $(( END - SECONDS > 1 ? END - SECONDS : 1 )); }
OUT=$R/q SIZES=0.5b,1.5b DTYPES=f16 STAGES=check TOKENIZER_DIR=.carry/tok WGFUSE=$MINE timeout $(( $(left) < 130 ? $(left) : 130 )) bench/baselines/run_qwen.sh > $R/check.log 2>&1
echo "check rc $?: $(grep -ci pass $R/check.log) pass lines, $(grep -ci fail $R/check.log) fail lines"; grep -i "fail\|rror" $R/check.log | head -5
P=$(seq -s, 1000 1015)
for size in 1.5b 0.5b; do
  M=$(ls -d /tmp/qwen/qwen2.5-$size-random-* | head -1)
  for v in mine:$MINE main:$MAIN mine:$MINE main:$MAIN mine:$MINE; do n=${v%%:*}; b=${v#*:}
    timeout $(( $(left) < 40 ? $(left) : 40 )) $b generate -m $M --prompt-ids $P -n 128 --temp 0 --warmup 64 --json $R/x/$size-$n-$SECONDS.json >/dev/null 2>$R/x/$size-$n.log
    echo "$size $n: $(tail -1 $R/x/$size-$n.log | grep -o 'decode [0-9.]* tok/s')"; done
  timeout $(( $(left) < 40 ? $(left) : 40 )) $MINE generate -m $M --prompt-ids $P -n 128 --temp 0 --profile=5 --json $R/x/prof-$size.json >/dev/null 2>$R/x/prof-$size.log
  sed -n '/^decode step at/,$p' $R/x/prof-$size.log | grep -v "^attention\|^embed\|^argmax"
done
for m in 1.5B 0.5B; do
  timeout $(left) $H/wgfuse_kernel_bench --model $m --dtype f16 --kind gate_up_silu --calls 100 --passes 3 --json $R/kb-$m-gu.json > $R/kb-$m-gu.txt 2>&1
  timeout $(left) $H/wgfuse_kernel_bench --model $m --dtype f16 --kind down_proj --calls 100 --passes 3 --json $R/kb-$m-down.json > $R/kb-$m-down.txt 2>&1
done
python3 - $R/kb-*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    try: r = json.load(open(f))["results"]
    except Exception as e: print(f, e); continue
    r.sort(key=lambda x: x["us_median"])
    for x in [y for y in r if y["label"]] + r[:5]:
        print(x["model"], x["kind"][:7], "t%d r%d w%d %s" % (x["team"], x["rows_per_team"], x["workgroup"], "st" if x.get("staged_x") else "di"),
              x["label"] or "-", "%.2f us %.0f%%" % (x["us_median"], x["pct_copy"]), "" if x["ok"] else "BAD")
PY
cd $OUT && tar czf r1.tgz r1
