. .baseline/setup_dev.sh
L=".llamacpp/llamacpp-run .llamacpp"
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
mkdir -p /tmp/gg
for m in 0.5b:$M5 1.5b:$M15; do n=${m%%:*}; d=${m#*:}
  [ -f /tmp/gg/$n-f16.gguf ] || $L convert_hf_to_gguf $d --outfile /tmp/gg/$n-f16.gguf --outtype f16 > /dev/null 2>&1 || echo "convert $n failed"
  for q in Q8_0 Q4_0 Q4_K_M; do [ -f /tmp/gg/$n-$q.gguf ] || $L llama-quantize /tmp/gg/$n-f16.gguf /tmp/gg/$n-$q.gguf $q > /dev/null 2>&1 || echo "quant $q failed"; done
done
for n in 0.5b 1.5b; do $L llama-bench -m /tmp/gg/$n-f16.gguf -m /tmp/gg/$n-Q8_0.gguf -m /tmp/gg/$n-Q4_0.gguf -m /tmp/gg/$n-Q4_K_M.gguf -ngl 99 -p 0 -n 128 -fa 1 -r 5 -o md 2>/dev/null | tee $OUT/llamabench_$n.md; done
