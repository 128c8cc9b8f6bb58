# Session 24 run 2. dist-m: main (0f09e81). dist-x: branch mixed-switch (the one-dispatch decoder
# over mixed tensor types, session 23's form, with quant_words' four loads unconditional so that they
# are issued together while the format is a runtime value) plus release-stores (the variant part
# "release"). (a) llama.cpp's 0.5B Q4_K_M (q5_0, q8_0, q6_K, q4_K): persistent against the step
# decoder; single-format files and prefill against main (the change to quant_words must fold away
# where the format is a constant). (b) the failure rate again: 8 workers, default vs release.
BUNDLE=bundle2.txz source .baseline/s24/common.sh
R=$OUT/r2; mkdir -p $R
L=".baseline/llamacpp-run .baseline/llama"; mkdir -p /tmp/gg
PP="--decode persistent --decode-check 32"
REL="--persistent-variant split+down=4+rounds=4+ahead+release"
{
M5=$(build 0.5b); echo "built $M5 $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-f16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
for q in Q8_0 Q4_K_M; do $L llama-quantize /tmp/gg/05-f16.gguf /tmp/gg/05-$q.gguf $q > $R/quant05-$q.log 2>&1 || echo "quantize $q failed"; done
echo "files $(date +%T)"
for rep in 1 2 3; do
  for b in m x; do
    dec $b-steps-Q4_K_M dist-$b /tmp/gg/05-Q4_K_M.gguf 16 128 $rep ""
    dec $b-steps-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 16 128 $rep ""
    dec $b-pers-Q8_0 dist-$b /tmp/gg/05-Q8_0.gguf 16 128 $rep "$PP"
    dec $b-pers-f16 dist-$b $M5 16 128 $rep "$PP"
  done
  dec x-pers-Q4_K_M dist-x /tmp/gg/05-Q4_K_M.gguf 16 128 $rep "$PP"
done
for rep in 1 2; do for b in m x; do pre $b-pre512-Q4_K_M dist-$b /tmp/gg/05-Q4_K_M.gguf 512 $rep ""; done; done
logits lg-m-steps dist-m /tmp/gg/05-Q4_K_M.gguf ""; logits lg-x-steps dist-x /tmp/gg/05-Q4_K_M.gguf ""
logits lg-x-pers dist-x /tmp/gg/05-Q4_K_M.gguf "$PP"
cmp lg-x-steps lg-m-steps; cmp lg-x-pers lg-m-steps
echo "stress from $(date +%T)"
mkdir -p $R/s
one() {  # worker w, run i: kind by parity
  local k=$([ $(( $2 % 2 )) = 0 ] && echo def || echo rel) x=""
  [ $k = rel ] && x="$REL"
  timeout 60 dist-x/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 8 --temp 0 --ctx 512 --decode persistent --decode-check 8 $x --json $R/s/$k-$1-$2.json > /dev/null 2>$R/s/$k-$1-$2.log || echo "$k-$1-$2 exit $?" >> $R/s/exits.txt
}
END=$(( $(date +%s) + 200 ))
for w in 1 2 3 4 5 6 7 8; do ( i=0; while [ $(date +%s) -lt $END ]; do one $w $i; i=$((i+1)); done ) & done; wait
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
} 2>&1 | tee -a $R/decode.txt
rm -f $R/*.npy
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
