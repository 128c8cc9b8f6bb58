# Session 28 run 3: the split attention's chunks combined by the last workgroup of each head
# (a = this tree) against main (m: chunks, then a combine dispatch). Predicted (run 2's profile:
# the combine dispatch 9.4 us a layer alone; the tail in the chunk kernel ~3-4 us): 0.5B after
# 4,000 prompt tokens ~1,050-1,085 -> ~915-940 us a token (86-88% of the short rate, ~806 us);
# short contexts unchanged (attend_short). Logits against main's at 4,000 and at 700 positions.
START=$(date +%s); BUNDLE=bundle3.txz source .baseline/s28/common.sh
R=/tmp/r3; mkdir -p $R $OUT/p; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
for L in 4000 700; do for b in m a; do lg $b-05-$L dist-$b $M5 $L ""; done; cmp m-05-$L a-05-$L; done
lg m-15-4000 dist-m $M15 4000 ""; lg a-15-4000 dist-a $M15 4000 ""; cmp m-15-4000 a-15-4000
lg m-05-4000-full dist-m $M5 4000 "--fusion full"; lg a-05-4000-full dist-a $M5 4000 "--fusion full"; cmp m-05-4000 a-05-4000-full
for rep in 1 2 3; do for b in m a; do
  dec $b-05-16 dist-$b $M5 16 128 $rep ""
  dec $b-05-4000 dist-$b $M5 4000 64 $rep ""
  dec $b-05-1000 dist-$b $M5 1000 64 $rep ""
done; done
for rep in 1 2; do for b in m a; do
  dec $b-15-16 dist-$b $M15 16 128 $rep ""
  dec $b-15-4000 dist-$b $M15 4000 64 $rep ""
  dec $b-05q-4000 dist-$b $M5 4000 64 $rep "--dtype q8_0"
done; done
timeout 150 dist-a/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > $OUT/p/a-long.txt 2>&1
grep -E "attention|one pass" $OUT/p/a-long.txt
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
