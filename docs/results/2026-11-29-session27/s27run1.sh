# Prepared in session 26 for the next session's first run: where the tags' remaining cost goes
# (session 26 run 2: nocheck 1,416 against no tags 1,499 at 0.5B f16, ~40 us a token). u = no tags
# (3c308fc), r = main cb4b7cc (the batch run again), s = branch tags-structure (scratch switches on
# main: WGFUSE_ABLATE = nocheck, plain (untagged stores), nocur (current K/V from the cache, no
# CUR_W), nopart (no blocks' tags before the first barrier)). Predicted: nocur takes most of the
# ~40 us (an extra round trip a layer), plain and nopart little. Then `s` with all four should be u.
START=$(date +%s); BUNDLE=bundle14.txz source .baseline/s26/common.sh
R=/tmp/r14; mkdir -p $R; O=$OUT/decode.txt
M5=$(build 0.5b); echo "built $(date +%T)" | tee -a $O
for rep in 1 2 3; do for dt in f16 q8_0; do
  for x in u r nocheck nocheck,plain nocheck,nocur nocheck,nopart nocheck,nocur,nopart,plain; do
    case $x in u|r) b=$x; unset WGFUSE_ABLATE;; *) b=s; export WGFUSE_ABLATE=$x;; esac
    dec $(echo $x | tr , +)-$dt dist-$b $M5 16 128 $rep "--dtype $dt --decode persistent --decode-check 8" | tee -a $O
  done
done; done
unset WGFUSE_ABLATE
echo "done $(( $(date +%s) - START )) s" | tee -a $O
