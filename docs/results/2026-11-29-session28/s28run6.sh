# Session 28 run 6: s = the last workgroup's combination without the exchanges' wait (run 5: the
# wait cost ~2.9 us a layer at 4,000 positions): partials stored with relaxed atomic stores; between
# dispatches every partial word is zero, a written one never is, and the combiner re-reads a zero
# (in flight), then sets the words back to zero. Predicted from run 5's ablation 1 (atomic stores,
# the counter, the combination: 992-997 us a token at 4,000): s ~995 us at 4,000 (main ~1,060),
# ~900 at 1,000 (main ~990); short contexts and 1.5B short unchanged.
START=$(date +%s); BUNDLE=bundle6.txz source .baseline/s28/common.sh
R=/tmp/r6; mkdir -p $R $OUT/p; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
lg m-05-4000 dist-m $M5 4000 ""; lg m-05-700 dist-m $M5 700 ""; lg m-15-4000 dist-m $M15 4000 ""
for i in 1 2 3; do lg s-05-4000-$i dist-s $M5 4000 ""; cmp m-05-4000 s-05-4000-$i; done
lg s-05-4000-c128 dist-s $M5 4000 "--attn-chunk 128"; cmp m-05-4000 s-05-4000-c128
lg s-05-700 dist-s $M5 700 ""; cmp m-05-700 s-05-700
lg s-15-4000 dist-s $M15 4000 ""; cmp m-15-4000 s-15-4000
lg s-05q-4000 dist-s $M5 4000 "--dtype q8_0"; lg m-05q-4000 dist-m $M5 4000 "--dtype q8_0"; cmp m-05q-4000 s-05q-4000
for rep in 1 2 3; do for b in m s; do
  dec $b-05-16 dist-$b $M5 16 128 $rep ""
  dec $b-05-600 dist-$b $M5 600 64 $rep ""
  dec $b-05-1000 dist-$b $M5 1000 64 $rep ""
  dec $b-05-2000 dist-$b $M5 2000 64 $rep ""
  dec $b-05-4000 dist-$b $M5 4000 64 $rep ""
done; dec s-05-4000-c128 dist-s $M5 4000 64 $rep "--attn-chunk 128"; done
for rep in 1 2; do for b in m s; do
  dec $b-15-16 dist-$b $M15 16 128 $rep ""
  dec $b-15-4000 dist-$b $M15 4000 64 $rep ""
  dec $b-05q-4000 dist-$b $M5 4000 64 $rep "--dtype q8_0"
done; done
timeout 150 dist-s/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > $OUT/p/s-long.txt 2>&1
grep -E "^attention|one pass" $OUT/p/s-long.txt
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
