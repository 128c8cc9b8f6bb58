# session 11 run 7: warm prefill time of short prompts (the suspect of TTFT at 8 joins), main 24bdf80
. .baseline/s11/common.sh
mkdir -p $OUT/r7
for n in 16 32 64 128 512; do
  for chunk in 4096 512 64; do
    ids=$(seq -s, 1000 $((1000 + n - 1)))
    echo -n "prompt $n chunk $chunk: "; timeout 60 $D/wgfuse-final generate -m $M5 --prompt-ids $ids -n 4 --temp 0 --warmup 4 --prefill-chunk $chunk 2>&1 >/dev/null | grep -oE "prefill [0-9.]+ tok/s"
  done
done 2>&1 | tee $OUT/r7/prefill_short.txt
timeout 60 $D/wgfuse-final generate -m $M5 --prompt-ids $(seq -s, 1000 1031) -n 4 --temp 0 --warmup 4 --json $OUT/r7/p32.json >/dev/null 2>&1
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
