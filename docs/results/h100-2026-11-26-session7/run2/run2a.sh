. .baseline/setup_dev.sh
gunzip -c .baseline/prefill/wgfuse.gz > .baseline/prefill/wgfuse && chmod +x .baseline/prefill/wgfuse && cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so .baseline/prefill/
OUT=$OUT/prefill REPS=5 LENGTHS=512,1024,4000 TOKENIZER_DIR=/tmp/tok MODELS=/tmp/qwen \
  VARIANTS="main:.baseline/main-100123b/wgfuse:;new:.baseline/prefill/wgfuse:;new-chunk4096:.baseline/prefill/wgfuse:--prefill-chunk 4096" \
  bash .baseline/prefill/prefill_bench.sh 2>&1 | tail -150
