# Session 26 run 2: where the tags' cost goes. u = untagged (9edcc8f^), a = tags-latency with ablation
# overrides: default (the tags as they would land), nocheck (tags stored, CUR_W, part tags read, but no
# check: stale_words always false), noreread (checks, but a stale word ends the dispatch: no re-read loop
# inlined at each check). Predicted: nocheck recovers most of a's ~100 us/token to u; noreread between.
START=$(date +%s); BUNDLE=bundle11.txz source .baseline/s26/common.sh
R=/tmp/r11; mkdir -p $R; O=$OUT/decode.txt
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)" | tee -a $O
v() { case $1 in u) unset WGFUSE_ABLATE; echo u;; a) unset WGFUSE_ABLATE; echo a;; *) export WGFUSE_ABLATE=$1; echo a;; esac; }
for rep in 1 2 3; do for dt in f16 q8_0; do for x in u a nocheck noreread; do
  b=$(v $x); [ $x = u -o $x = a ] && unset WGFUSE_ABLATE || export WGFUSE_ABLATE=$x
  dec $x-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8" | tee -a $O
done; done; done
for rep in 1 2; do for x in u a nocheck; do
  b=$(v $x); [ $x = u -o $x = a ] && unset WGFUSE_ABLATE || export WGFUSE_ABLATE=$x
  dec $x-15 dist-$b $M15 16 128 $rep "--dtype bf16 --decode persistent --decode-check 8" | tee -a $O
done; done
for x in u a nocheck noreread; do
  b=$(v $x); [ $x = u -o $x = a ] && unset WGFUSE_ABLATE || export WGFUSE_ABLATE=$x
  logits L$x dist-$b $M5 "--decode persistent --decode-check 0"
done
unset WGFUSE_ABLATE; logits Ls dist-u $M5 ""
{ for x in u a nocheck noreread; do cmp L$x Ls; done; } | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
