# Session 27 run 8 (the budget's last ~3 minutes): the persistent decoder's existing variants at 1.5B,
# where it is slower than the step decoder (run 6). main's build (m), q8_0 and bf16, one run each.
START=$(date +%s); BUNDLE=bundle20.txz source .baseline/s27/common.sh
R=/tmp/r21; mkdir -p $R; O=$OUT/decode.txt
{
M15=$(build 1.5b); echo "built $(date +%T)"
for dt in q8_0 bf16; do
  for v in split+down=4+rounds=4+ahead split+down=2+rounds=4+ahead split+down=8+rounds=4+ahead split+rounds=4+ahead split+down=4+rounds=4; do
    [ $(( $(date +%s) - START )) -gt 130 ] && break
    dec $dt-$v dist-m $M15 16 128 1 "--dtype $dt --decode persistent --decode-check 8 --persistent-variant $v"
  done
done
} 2>&1 | tee -a $O
echo "done $(( $(date +%s) - START )) s" | tee -a $O
