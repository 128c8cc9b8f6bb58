# session 9 run 4: prefill helper's request 1 (chunk and split-K sweep on main f3c59eb)
. .baseline/setup_dev.sh 2>/dev/null
cp .baseline/prefill_sweep.sh bench/baselines/
mkdir -p $OUT/p1
OUT=$OUT/p1 TOKENIZER_DIR=/tmp/tok timeout 540 bench/baselines/prefill_sweep.sh > $OUT/p1/sweep.log 2>&1; echo "rc=$?"
cat $OUT/p1/prefill.md 2>/dev/null | head -40; tail -5 $OUT/p1/sweep.log
cd $OUT && tar czf p1.tgz p1 && rm -rf p1
