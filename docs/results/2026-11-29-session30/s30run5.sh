# Session 30 run 5: the batched decoder's attention (attend_rows, `serve --parallel`, `generate
# --parallel`) with a round's V rows in batches of 16 loads in flight, the first requested before
# the round's softmax (b: main 30c3fba + that) against main (x, 976dc33: the batched decoder's
# kernels are unchanged between 976dc33 and 30c3fba).
# Predicted: a round of 256 positions costs 1 trip of V loads instead of 4 (0.5B: 16 slices, 16
# positions a thread) and overlaps the round's reductions: ~3 trips (2-3 us) a round less, at
# 8 sequences after 2,000 positions (8 rounds) ~20 us a layer: step 3.1 -> ~2.6 ms (+15-20%); after
# 16 +1-2%; 1.5B (8 slices: 2 batches a round) +10% at 2,000-4,000.
START=$(date +%s); BUNDLE=bundle-5.txz source .baseline/s30/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run5.txt
par() {  # label, binary dir, model, prompt length, rep, sequences
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 64 --warmup 16 --temp 0 --ctx 4096 --parallel $6 --json $R/$1-$5.json > /dev/null 2>$R/$1-$5.log || echo "$1 failed: $(tail -2 $R/$1-$5.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$5.json')); p=d['parallel']; s=p['step_ms']; print('$1', $5, 'step', round(s['median'],3), '[%.3f-%.3f]' % (s['min'], s['max']), 'ms', round(p['tok_s'],1), 'tok/s in all', round(p['tok_s_per_sequence'],1), 'a sequence')"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for rep in 1 2 3; do for n in 16 1000 2000 4000; do for b in x b; do
  par $b-05-$n dist-$b $M5 $n $rep 8
done; done; done
for rep in 1 2; do for n in 16 2000 4000; do for b in x b; do
  par $b-15-$n dist-$b $M15 $n $rep 8
done; done; done
for rep in 1 2; do for b in x b; do par $b-05-p1-2000 dist-$b $M5 2000 $rep 1; done; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
