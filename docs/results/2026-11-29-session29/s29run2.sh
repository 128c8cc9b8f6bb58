# Session 29 run 2: the persistent decoder's prompt through the step decoder's prefill, on its
# matrices (n = this tree) against main (k = 842eb68, kernels as e6dbb31).
# Predicted: n's time to the first token after 4,000 prompt tokens ~0.2 s against k's ~5 s (one
# dispatch a position, ~1.3 ms each); decode rates level (the same kernel); n's GPU memory k's plus
# the step decoder's KV cache and prefill buffers, minus nothing (k counted only its own); logits of
# n within ~1e-5 of k's step decoder, tokens equal.
START=$(date +%s); BUNDLE=bundle-a.txz source .baseline/s29/common.sh
R=/tmp/rn; mkdir -p $R; O=$OUT/run2.txt
ptd() {  # label, binary dir, model, prompt length, rep, extra
  local t0=$(date +%s.%N)
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 64 --warmup 8 --temp 0 --ctx 4096 $6 --json $R/$1-$5.json > /dev/null 2>$R/$1-$5.log || echo "$1 failed: $(tail -2 $R/$1-$5.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$5.json')); x=d.get('decode',{}); print('$1', $5, 'decode', round(d['decode_tok_s'],1), 'ttft_ms', round(d['prefill_ms'],1), 'gpu_MB', round(d['gpu_memory_bytes']/1e6,1), 'weights_MB', round(d['weight_bytes']/1e6,1), x.get('mode'), x.get('checked_tokens'), 'load', round(d['load_ms']/1e3,2), 'wall', round($(date +%s.%N)-$t0,1), (x.get('fallback_reason') or '')[:160])"
}
lg() {  # label, binary dir, model, prompt length, extra
  timeout 150 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 24 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
P="--decode persistent --decode-check 8"
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 16 1000 4000; do
  lg ks-$n dist-k $M5 $n ""; lg kp-$n dist-k $M5 $n "$P"; lg np-$n dist-n $M5 $n "$P"
  cmp kp-$n ks-$n; cmp np-$n ks-$n; cmp np-$n kp-$n
done
lg ks15-4000 dist-k $M15 4000 ""; lg np15-4000 dist-n $M15 4000 "$P"; cmp np15-4000 ks15-4000
echo "logits done $(date +%T)"
for rep in 1 2; do for n in 16 600 1000 2000 4000; do for b in k n; do
  ptd $b-pers-$n dist-$b $M5 $n $rep "$P"
done; done; done
ptd k-steps-4000 dist-k $M5 4000 1 ""
for b in k n; do ptd $b-pers15-4000 dist-$b $M15 4000 1 "$P"; done
ptd k-steps15-4000 dist-k $M15 4000 1 ""
grep -h "persistent decode:" $R/np-4000.log $R/n-pers-16-1.log | head -2
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
