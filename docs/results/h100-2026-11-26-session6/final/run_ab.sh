for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/main-3abdacb/
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/ab A=.baseline/main-3abdacb/wgfuse B=dist/wgfuse-linux-x64/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=f16 B_DTYPES=f16,bf16 REPS=5 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
python3 - $OUT/ab/ab <<'P'
import json,sys,glob,statistics as s,collections
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.json'):
    k=f.split('/')[-1].rsplit('~',1)[0]; d[k].append(json.load(open(f))['upload_ms'])
for k,v in sorted(d.items()): print(k, 'upload_ms median', round(s.median(v)), [round(x) for x in v])
P
dist/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 64 --temp 0 --profile 2>&1 >/dev/null | tail -14 > $OUT/profile_05b_bf16.txt
cd $OUT && tar czf ab_runs.tgz ab/ab && rm -rf ab/ab
