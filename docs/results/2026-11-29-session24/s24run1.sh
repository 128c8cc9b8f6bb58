# Session 24 run 1: branch release-stores (324f7a0; stores that other workgroups read after a grid
# barrier as atomicExchange whose old values each thread's arrival waits on). dist-r: that build; its
# default variant is main's, "+release" adds the exchanges. (a) cost: 0.5B f16 and q8_0 (at load),
# 1.5B f16, decode 128 after 16, default vs release interleaved. (b) failure rate: short persistent
# runs (8 tokens, all checked against the step decoder), each a fresh process, 4 at once,
# default and release alternating, for a fixed time.
BUNDLE=bundle1.tgz source .baseline/s24/common.sh
R=$OUT/r1; mkdir -p $R
PP="--decode persistent --decode-check 32"
REL="--persistent-variant split+down=4+rounds=4+ahead+release"
{
M5=$(build 0.5b); echo "built $M5 $(date +%T)"
for rep in 1 2 3; do
  for d in f16 q8_0; do
    dec pers-05-$d dist-r $M5 16 128 $rep "$PP --dtype $d"
    dec rel-05-$d dist-r $M5 16 128 $rep "$PP --dtype $d $REL"
  done
done
logits lg-pers dist-r $M5 "$PP"; logits lg-rel dist-r $M5 "$PP $REL"; logits lg-steps dist-r $M5 ""
cmp lg-rel lg-pers; cmp lg-rel lg-steps
echo "stress from $(date +%T)"
mkdir -p $R/s
one() {  # worker w, run i: kind by parity
  local k=$([ $(( $2 % 2 )) = 0 ] && echo def || echo rel) x=""
  [ $k = rel ] && x="$REL"
  timeout 60 dist-r/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 8 --temp 0 --ctx 512 --decode persistent --decode-check 8 $x --json $R/s/$k-$1-$2.json > /dev/null 2>$R/s/$k-$1-$2.log || echo "$k-$1-$2 exit $?" >> $R/s/exits.txt
}
END=$(( $(date +%s) + 230 ))
for w in 1 2 3 4; do ( i=0; while [ $(date +%s) -lt $END ]; do one $w $i; i=$((i+1)); done ) & done; wait
echo "stress to $(date +%T)"
python3 - $R/s <<'PY'
import json, glob, sys, collections
c = collections.Counter(); bad = []
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    k = f.split('/')[-1].split('-')[0]
    d = json.load(open(f)); x = d.get('decode', {})
    c[k, 'runs'] += 1
    if x.get('mode') != 'persistent':
        c[k, 'fallback'] += 1; bad.append((f.split('/')[-1], (x.get('fallback_reason') or '')[:200]))
print(dict(c)); [print(*b) for b in bad]
PY
M15=$(build 1.5b); echo "built $M15 $(date +%T)"
for rep in 1 2; do
  dec pers-15-f16 dist-r $M15 16 128 $rep "$PP"
  dec rel-15-f16 dist-r $M15 16 128 $rep "$PP $REL"
done
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
