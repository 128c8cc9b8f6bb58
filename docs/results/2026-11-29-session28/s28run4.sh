# Session 28 run 4: b = the combine in one pass over the chunks (each thread folds its chunks as
# they come: one round of loads where run 3's build had two and a reduction more), and the chunk
# kernel's workgroup a thread per position up to 256 (--attn-chunk 128 / 256: 32 / 16 chunks at
# 4,000 positions for the last workgroup to combine, the same work a thread). Run 3: the first
# version was level with main at 4,000 positions (tail ~6 us a layer), +6.5% at 1,000.
# Predicted: b at 4,000 ~3 us a layer better than run 3's (~990 us a token); chunk 256 better again.
START=$(date +%s); BUNDLE=bundle4.txz source .baseline/s28/common.sh
R=/tmp/r4; mkdir -p $R $OUT/p; O=$OUT/decode.txt
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
lg m-05-4000 dist-m $M5 4000 ""
for c in 64 128 256; do lg b-05-4000-c$c dist-b $M5 4000 "--attn-chunk $c"; cmp m-05-4000 b-05-4000-c$c; done
for rep in 1 2 3; do
  dec m-05-4000 dist-m $M5 4000 64 $rep ""
  for c in 64 128 256; do dec b-05-4000-c$c dist-b $M5 4000 64 $rep "--attn-chunk $c"; done
  dec m-05-1000 dist-m $M5 1000 64 $rep ""
  for c in 64 256; do dec b-05-1000-c$c dist-b $M5 1000 64 $rep "--attn-chunk $c"; done
done
for rep in 1 2; do
  dec m-15-4000 dist-m $M15 4000 64 $rep ""
  for c in 64 128 256; do dec b-15-4000-c$c dist-b $M15 4000 64 $rep "--attn-chunk $c"; done
  dec m-05-600 dist-m $M5 600 64 $rep ""
  for c in 64 256; do dec b-05-600-c$c dist-b $M5 600 64 $rep "--attn-chunk $c"; done
done
for c in 64 256; do
  timeout 150 dist-b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --attn-chunk $c --profile=9 > $OUT/p/b-long-c$c.txt 2>&1
  echo "c$c $(grep -E 'attention' $OUT/p/b-long-c$c.txt)"
done
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
