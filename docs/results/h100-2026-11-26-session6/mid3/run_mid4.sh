for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/load/
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122); q.build_model('1.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
OUT=$OUT/ab A=dist/wgfuse-linux-x64/wgfuse B=.baseline/load/wgfuse MODELS="0.5b=$M5 1.5b=$M15" A_DTYPES=bf16,f16 B_DTYPES=bf16,f16 REPS=3 bench/baselines/ab_decode.sh > /dev/null
cat $OUT/ab/ab.md
python3 - $OUT/ab/ab <<'P'
import json,sys,glob,statistics as s,collections
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*.json'):
    k=f.split('/')[-1].rsplit('~',1)[0]; d[k].append(json.load(open(f))['upload_ms'])
for k,v in sorted(d.items()): print(k, 'upload_ms median', round(s.median(v)), [round(x) for x in v])
P
rm -rf $OUT/ab/ab
