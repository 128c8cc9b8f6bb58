# Session 31 run 7: the final tree (f: main 7th commit of the session, the split partials' rows from
# state word 2) against main (m: aa0975e): logits and prefill rates at 200 / 512 / 1,024 tokens
# (expected: run 2's figures), the 0.5B bf16 folder; decode unchanged (control).
START=$(date +%s); BUNDLE=bundle-7.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run7.txt
lgn() {  # label, binary dir, model, prompt length
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 8 --temp 0 --ctx 4096 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); echo "built $(date +%T)"
for n in 200 512 1024; do lgn m-$n dist-m $M5 $n; lgn f-$n dist-f $M5 $n; cmp f-$n m-$n; done
for rep in 1 2 3; do for n in 200 512 1024; do pre m-$n dist-m $M5 $n $rep ""; pre f-$n dist-f $M5 $n $rep ""; done; done
for rep in 1 2; do for b in m f; do dec $b-dec dist-$b $M5 16 128 $rep ""; done; done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
