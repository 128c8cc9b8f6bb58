# Session 12 run 7: short prompt chunks through the row products (--prefill-short-max, default 64) against
# main 6129582 (wgfuse-main, wgfuse-serve-main) in the same call.
source .baseline/s12/common.sh
mkdir -p /tmp/servelibs && tar xzf .servelibs/servelibs.tgz -C /tmp/servelibs && export LD_LIBRARY_PATH=/tmp/servelibs
mkdir -p $OUT/r7; R=$OUT/r7
for s in wgfuse-serve-main wgfuse-serve; do $D/$s --help >/dev/null 2>&1 || { echo "$s does not start"; exit 1; }; done
rate() { grep -oE "prefill [0-9.]+ tok/s" | grep -oE "[0-9.]+" ; }
# A: warm prefill of one prompt chunk by length (tok/s, then ms), short max 0 / 64 / 128 and main; 2 runs each
for n in 1 8 16 17 32 48 64 65 100 128 512; do
  ids=$(seq -s, 1000 $((1000 + n - 1)))
  for v in main 0 64 128; do
    for rep in 1 2; do
      if [ $v = main ]; then r=$(timeout 60 $D/wgfuse-main generate -m $M5 --prompt-ids $ids -n 4 --temp 0 --warmup 4 2>&1 >/dev/null | rate)
      else r=$(timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $ids -n 4 --temp 0 --warmup 4 --prefill-short-max $v 2>&1 >/dev/null | rate); fi
      echo "prompt $n short_max $v rep $rep: $r tok/s $(python3 -c "print(round(1000*$n/$r,2) if '$r' else '')") ms"
    done
  done
done 2>&1 | tee $R/prefill_by_length.txt
# B: per-kernel profile of a 16- and a 64-token chunk through the short passes
for n in 16 64; do timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 $((1000 + n - 1))) -n 2 --temp 0 --warmup 1 --profile-prefill=5 2>&1 >/dev/null | sed -n '/^prefill chunk of/,$p' > $R/profile$n.txt; done
head -12 $R/profile16.txt
# C: the short passes' logits against the tiled products' on the H100 (37- and 13-token prompts, 6 tokens)
for n in 13 37; do for s in 0 64; do timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 2000 $((2000 + n - 1))) -n 6 --temp 0 --prefill-short-max $s --dump-logits /tmp/l$n-$s.npy --json $R/ids$n-$s.json >/dev/null 2>&1; done
python3 -c "
import numpy as np, json; a=np.load('/tmp/l$n-0.npy'); b=np.load('/tmp/l$n-64.npy')
ia=json.load(open('$R/ids$n-0.json'))['generated_ids']; ib=json.load(open('$R/ids$n-64.json'))['generated_ids']
print('prompt $n: max |short - tiled| logits', float(np.abs(a-b).max()), 'of max', float(np.abs(a).max()), 'tokens equal', ia==ib)"; done | tee $R/equal.txt
# D: serve: TTFT at 1/8/32 concurrent and a long join, main's server against this one
OUT=$R/serve FOLDER=$M5 TOKENIZER_DIR=/tmp/tok BEFORE=$D/wgfuse-serve-main JOIN_TOKENS=512 timeout 330 bench/baselines/serve_join.sh > $R/serve_join.log 2>&1; echo "serve_join rc=$?"
tail -6 $R/serve_join.log
# E: decode unchanged (the products moved into RowProducts): single and --parallel 8, main and this
G="generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16"
for rep in 1 2; do for b in wgfuse-main wgfuse; do echo "$b: $(timeout 60 $D/$b $G 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s') | $(timeout 60 $D/$b $G --parallel 8 2>&1 >/dev/null | grep -E '^parallel' | cut -c1-150)"; done; done | tee $R/decode.txt
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
