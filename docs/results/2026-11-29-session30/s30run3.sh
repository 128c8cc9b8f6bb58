# Session 30 run 3: the change to land (s: V batches + attend_short up to 16,384 / head_dim
# positions: 256 at 0.5B, 128 at 1.5B) against main (x, 976dc33); t = s with batches of 8 V loads
# (question: does the batch's 64 registers cost attend_chunk occupancy at 4,000 positions?);
# the driver's statistics of the attention kernels of x, s and t.
# Predicted for s against x: +1% at 16, +7-9% at 300-400 (run 2: the split 1,110-1,150 against
# attend_short's 1,058-1,069), +3% at 500-1,000, +1% at 2,000, +4% at 4,000 (runs 1-2 together);
# 1.5B +2-3% at 1,000-4,000, level at 200. Logits within 1e-6 of x's, tokens equal.
START=$(date +%s); BUNDLE=bundle-3.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R /tmp/p $OUT/st; O=$OUT/run3.txt
lg() {  # label, binary dir, model, prompt length
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 300 4000; do for b in x s t; do lg $b-$n dist-$b $M5 $n; done; cmp s-$n x-$n; cmp t-$n x-$n; done
for n in 200 3000; do for b in x s; do lg ${b}15-$n dist-$b $M15 $n; done; cmp s15-$n x15-$n; done
for b in x s t; do
  timeout 120 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 4 --temp 0 --ctx 4096 --dump-shaders --verbose 2> $R/dump-$b.txt > /dev/null; echo "dump $b rc $?"
  SPIRV_AS=.baseline/s30/spirv-as python3 bench/baselines/vk_pipeline_stats.py $R/dump-$b.txt --tool .baseline/s30/vk_pipeline_stats --out $R/st-$b --grep attend 2>&1 | tail -1
  cp $R/st-$b/stats.md $OUT/st/$b.md; grep -E "attend_(chunk|short)" $OUT/st/$b.md | sed 's/{[^}]*}//'
done
for rep in 1 2 3; do for n in 16 200 300 400 500 1000 2000 4000; do for b in x s; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep ""
done; done; done
for rep in 1 2 3; do dec t-05-4000 dist-t $M5 4000 64 $rep ""; dec t-05-1000 dist-t $M5 1000 64 $rep ""; done
for rep in 1 2; do for n in 16 200 1000 4000; do for b in x s; do
  dec $b-15-$n dist-$b $M15 $n 64 $rep ""
done; done; done
for b in x s; do for n in 300 4000; do
  timeout 150 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids $n) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > /tmp/p/$b-$n.txt 2>&1
  echo "$b $n $(grep -E '^attention|one pass' /tmp/p/$b-$n.txt | tr -s ' ' | tr '\n' '|')"
done; done
} 2>&1 | tee -a $O
cd /tmp && tar czf $OUT/p.tgz p; cd $OUT && tar czf st.tgz st && rm -rf st
echo "done $(( $(date +%s) - START )) s" | tee -a $O
