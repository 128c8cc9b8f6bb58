. .baseline/setup_dev.sh
python3 bench/baselines/gguf_check.py --wgfuse dist/wgfuse-linux-x64/wgfuse --llamacpp .llamacpp --tools .llamacpp --tokenizer-dir /tmp/tok --out /tmp/gguf --models 0.5b,qwen3-0.6b,llama3.2-1b,smollm2-360m --json $OUT/gguf.json > $OUT/gguf.md 2> $OUT/gguf.log; echo rc=$?; cat $OUT/gguf.md; tail -5 $OUT/gguf.log
