# Session 12 run 12 (planning data for issue 23): per-kernel profiles of one decode step, Qwen2.5-1.5B's real config
# (random weights) stored f16, q8_0, q4_k and q5_0 (quantized at load), 128 tokens after 16; this tree (main c7c8f70's code).
source .baseline/s12/common10.sh
mkdir -p $OUT/r12; R=$OUT/r12
M15=$(build 1.5b)
for dt in f16 q8_0 q4_k q5_0; do
  timeout 120 $D/wgfuse generate -m $M15 --dtype $dt --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 --profile=3 2>$R/p15-$dt.txt >/dev/null
  echo "== $dt: $(grep -oE 'decode [0-9.]+ tok/s' $R/p15-$dt.txt | head -1)"; grep -E "^(qkv|attention|o_proj|gate_up|down|lm_head|one pass)" $R/p15-$dt.txt
done
cd $OUT && tar czf r12.tgz r12 && rm -rf r12
