# session 11 run 8: --profile-prefill of a 16-token prompt (the ~18.5 ms floor of a prefill call), main 24bdf80
. .baseline/s11/common.sh
mkdir -p $OUT/r8
timeout 60 $D/wgfuse-final generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 2 --temp 0 --warmup 1 --profile-prefill=5 > /dev/null 2> $OUT/r8/profile16.txt
sed -n '/^prefill chunk of/,$p' $OUT/r8/profile16.txt | head -30
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
