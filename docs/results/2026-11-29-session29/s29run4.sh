# Session 29 run 4: the step decoder's split attention (attend_chunk) in larger workgroups at the
# default chunk of 64 positions. x = branch attn-wg (main 639dff1 + WGFUSE_ATTN_WG_MIN, an
# experiment switch): unset = main's rule (64 threads at 0.5B's head_dim 64, 128 at 1.5B's 128).
# Predicted with 128 threads: the V sum in 8 slices of 8 positions (2 trips of 4 loads instead of
# 4) and at 4,000 positions the combination of 63 chunks in one batch round instead of 2: ~1.5 us a
# layer at 4,000 (+3.5%), ~0.5 us at 600-1,000 (+1%), level at 16 (attend_short); 256 level with 128.
START=$(date +%s); BUNDLE=bundle-c.txz source .baseline/s29/common.sh
R=/tmp/rn; mkdir -p $R /tmp/p; O=$OUT/run4.txt
lg() {  # label, prompt length, model, extra
  timeout 150 dist-x/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $2) -n 24 --temp 0 --ctx 4096 $4 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
lg w0-4000 4000 $M5; WGFUSE_ATTN_WG_MIN=128 lg w128-4000 4000 $M5; WGFUSE_ATTN_WG_MIN=256 lg w256-4000 4000 $M5
cmp w128-4000 w0-4000; cmp w256-4000 w0-4000
for rep in 1 2 3; do for n in 16 600 1000 2000 4000; do for w in 0 128 256; do
  WGFUSE_ATTN_WG_MIN=$w dec w$w-05-$n dist-x $M5 $n 64 $rep ""
done; done; done
for rep in 1 2; do for n in 1000 4000; do for w in 0 256; do
  WGFUSE_ATTN_WG_MIN=$w dec w$w-15-$n dist-x $M15 $n 64 $rep ""
done; done; done
for rep in 1 2 3; do for w in 0 256; do
  WGFUSE_ATTN_WG_MIN=$w dec c128-w$w-05-4000 dist-x $M5 4000 64 $rep "--attn-chunk 128"
done; done
for w in 0 128 256; do
  WGFUSE_ATTN_WG_MIN=$w timeout 150 dist-x/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 4000) -n 32 --warmup 16 --temp 0 --ctx 4096 --profile=9 > /tmp/p/w$w-long.txt 2>&1
  echo "w$w $(grep -E '^attention|one pass' /tmp/p/w$w-long.txt | tr -s ' ' | tr '\n' '|')"
done
} 2>&1 | tee -a $O
cd /tmp && tar czf $OUT/p.tgz p
echo "done $(( $(date +%s) - START )) s" | tee -a $O
