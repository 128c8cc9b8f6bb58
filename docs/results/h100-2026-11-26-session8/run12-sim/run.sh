# session 8 run 12: issue 27's sim gap script (simbase helper), merged main
. .baseline/setup_dev.sh
mkdir -p $OUT/r12
OUT=$OUT/r12 bench/baselines/sim_gap.sh > $OUT/r12/stdout.txt 2>&1; echo "sim_gap rc=$?"
tail -5 $OUT/r12/stdout.txt; cat $OUT/r12/summary.md
cd $OUT && tar czf r12.tgz r12 && rm -rf r12
