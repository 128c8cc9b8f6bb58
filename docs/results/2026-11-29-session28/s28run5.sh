# Session 28 run 5: where the in-kernel combination's ~6 us a layer goes (runs 3-4: the chunk
# kernel 15.8 -> 21.7-22.2 us at 4,000 positions whatever the chunk count). Experiment build x
# (the attn-last branch + WGFUSE_ABLATE): 0 as the branch; 1 partials as atomic stores (no
# exchange, no wait for it); 2 as 1 without the counter or the combination (timing only);
# 3 the counter but no combination (timing only). 0.5B, 4,000 prompt tokens, --profile.
START=$(date +%s); BUNDLE=bundle5.txz source .baseline/s28/common.sh
R=/tmp/r5; mkdir -p $R $OUT/p; O=$OUT/decode.txt
{
M5=$(build 0.5b); echo "built $(date +%T)"
pr() {  # label binary extra (env before)
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 $3 --profile=9 > $OUT/p/$1.txt 2>&1
  echo "$1 $(grep -E '^attention|one pass' $OUT/p/$1.txt | tr -s ' ' | tr '\n' '|')"
}
for rep in 1 2; do
pr m dist-m ""
for a in 0 1 2 3; do for c in 64 256; do WGFUSE_ABLATE=$a pr x-a$a-c$c dist-x "--attn-chunk $c"; done; done
done
for rep in 1 2; do
  dec m-05-4000 dist-m $M5 4000 64 $rep ""
  WGFUSE_ABLATE=0 dec x0-05-4000 dist-x $M5 4000 64 $rep ""
  WGFUSE_ABLATE=1 dec x1-05-4000 dist-x $M5 4000 64 $rep ""
done
} 2>&1 | tee -a $O
cd $OUT && tar czf p.tgz p && rm -rf p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
