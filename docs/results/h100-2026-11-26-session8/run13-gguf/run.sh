# session 8 run 13: quantized GGUF files from llama-quantize (issue 23): dequantization against gguf-py, logits against transformers on the dequantized weights, decode against llama.cpp on the same files
. .baseline/setup_dev.sh
W=dist/wgfuse-linux-x64/wgfuse; L=".llamacpp/llamacpp-run .llamacpp"
mkdir -p $OUT/r13
python3 bench/baselines/gguf_check.py --wgfuse $W --llamacpp .llamacpp --tools .llamacpp --tokenizer-dir /tmp/tok --out /tmp/gguf_check \
  --models 0.5b --quants Q8_0,Q4_K_M,Q4_0,Q5_0,Q6_K --json $OUT/r13/gguf_q_0.5b.json > $OUT/r13/gguf_q_0.5b.md 2> $OUT/r13/gguf_q_0.5b.log; echo "check 0.5b rc=$?"; tail -25 $OUT/r13/gguf_q_0.5b.md
ls /tmp/gguf_check | head -20
for m in qwen2.5-0.5b; do for q in f16 Q8_0 Q4_0 Q4_K_M; do
  F=$(ls /tmp/gguf_check/$m*.$q.gguf 2>/dev/null | head -1); [ -n "$F" ] || { echo "no $m $q"; continue; }
  for r in 1 2 3; do $W generate -m $F --prompt-ids $(seq -s, 100 115) -n 128 --temp 0 --warmup 64 --json $OUT/r13/wg-$m-$q-$r.json 2>&1 | tail -1 | cut -c1-260; done
  $L llama-bench -m $F -ngl 99 -p 512 -n 128 -fa 1 -r 3 -o md 2>/dev/null | tail -3
done; done
cd $OUT && tar czf r13.tgz r13 && rm -rf r13
