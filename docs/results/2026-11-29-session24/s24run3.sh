# Session 24 run 3: the persistent decoder's rare failure with the GPU idle between runs. The
# failures on record came at a kernel's first use after an idle spell (run 2: x-pers-f16's first
# run, step 31; session 23 run 4; session 22 on a fresh machine), none in 557 back-to-back runs of
# run 2's 8 workers. Here one process at a time, 3 s idle before each, default and release
# (branch release-stores) alternating; the SM clock before each run recorded.
BUNDLE=bundle2.txz source .baseline/s24/common.sh
R=$OUT/r3; mkdir -p $R/s
REL="--persistent-variant split+down=4+rounds=4+ahead+release"
{
M5=$(build 0.5b); echo "built $M5 $(date +%T)"
END=$(( $(date +%s) + 330 )); i=0
while [ $(date +%s) -lt $END ]; do
  k=$([ $(( i % 2 )) = 0 ] && echo def || echo rel); x=""; [ $k = rel ] && x="$REL"
  sleep 3
  clk=$(nvidia-smi --query-gpu=clocks.sm,pstate --format=csv,noheader | tr -d ' ')
  timeout 60 dist-x/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 8 --temp 0 --ctx 512 --decode persistent --decode-check 8 $x --json $R/s/$k-$i.json > /dev/null 2>$R/s/$k-$i.log || echo "$k-$i exit $?"
  echo "$k-$i $clk $(python3 -c "import json; x=json.load(open('$R/s/$k-$i.json')).get('decode',{}); print(x.get('mode'), (x.get('fallback_reason') or '')[:160])")"
  i=$((i+1))
done
python3 - $R/s <<'PY'
import json, glob, sys, collections
c = collections.Counter()
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    k = f.split('/')[-1].split('-')[0]; x = json.load(open(f)).get('decode', {})
    c[k, 'runs'] += 1; c[k, 'fallback'] += x.get('mode') != 'persistent'
print(dict(c))
PY
} 2>&1 | tee -a $R/decode.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
