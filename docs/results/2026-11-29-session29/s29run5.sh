# Session 29 run 5: the step decoder's split attention in workgroups of at least 128 threads, and
# from 2,048 positions in chunks of 128 (l = this tree, --attn-long-from 2048) against main
# (x = run 4's build, its switch unset: main 639dff1's kernels).
# Predicted from run 4: +1.7% at 600 and 1,000 positions, level at 16 (attend_short) and 2,000
# (chunks of 64 there), +7% at 4,000 (chunks of 128: run 4 995 against 927 tok/s); 1.5B (head_dim
# 128: 128 threads already) level at 1,000, a few % at 4,000. Logits within 1e-6 of x's, tokens equal.
START=$(date +%s); BUNDLE=bundle-d.txz source .baseline/s29/common.sh
R=/tmp/rn; mkdir -p $R /tmp/p; O=$OUT/run5.txt
lg() {  # label, binary dir, model, prompt length
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 1000 4000; do lg x-$n dist-x $M5 $n; lg l-$n dist-l $M5 $n; cmp l-$n x-$n; done
lg x15-4000 dist-x $M15 4000; lg l15-4000 dist-l $M15 4000; cmp l15-4000 x15-4000
for rep in 1 2 3; do for n in 16 600 1000 2000 3000 4000; do for b in x l; do
  dec $b-05-$n dist-$b $M5 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 1000 4000; do for b in x l; do
  dec $b-15-$n dist-$b $M15 $n 64 $rep ""
done; done; done
for b in x l; do
  timeout 150 dist-$b/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > /tmp/p/$b-long.txt 2>&1
  echo "$b $(grep -E '^attention|one pass' /tmp/p/$b-long.txt | tr -s ' ' | tr '\n' '|')"
done
} 2>&1 | tee -a $O
cd /tmp && tar czf $OUT/p.tgz p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
