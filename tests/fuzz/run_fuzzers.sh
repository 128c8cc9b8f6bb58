#!/bin/sh
# Builds the libFuzzer targets with clang (apart from the g++ build: only the parser and validator sources and
# their headers) and runs each for a bounded time on a scratch copy of its seed corpus. Fails on
# any crash, sanitizer report or uncaught exception; the input that found it is left in OUT.
# Usage: tests/fuzz/run_fuzzers.sh [OUT (default build/fuzz)] [SECONDS per target (default 20)]
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/build/fuzz}
seconds=${2:-20}
cxx=${FUZZ_CXX:-clang++-14}
mkdir -p "$out/obj"
flags="-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -I$src/src"

# Compile the sources in parallel (nlohmann/json makes each a slow compile), each only
# when it or a header it may include is newer than its object.
pids=""
arch="src/llm/architecture.cpp src/llm/arch_qwen2.cpp src/llm/arch_qwen3.cpp src/llm/arch_llama.cpp"
# A tensor's dtype is a gpu::DType (quantized GGUF blocks included): what every model file reads.
tensor="src/llm/tensor.cpp src/gpu/weight_format.cpp src/gpu/ggml_blocks.cpp"
# A folder's AWQ/GPTQ layers are converted at open, the layers in parallel.
quantized="src/llm/hf_quant.cpp src/util/worker_pool.cpp"
for f in src/llm/safetensors.cpp src/llm/gguf.cpp src/llm/gguf_model.cpp src/llm/model_files.cpp src/llm/tokenizer.cpp \
         src/llm/chat_template.cpp src/serve/submission.cpp $arch $tensor $quantized tests/fuzz/fuzz_safetensors.cpp tests/fuzz/fuzz_gguf.cpp \
         tests/fuzz/fuzz_config.cpp tests/fuzz/fuzz_tokenizer.cpp tests/fuzz/fuzz_submission.cpp tests/fuzz/fuzz_model_folder.cpp; do
  obj="$out/obj/$(basename "$f" .cpp).o"
  if [ -f "$obj" ] && [ -z "$(find "$src/$f" "$src"/src/llm/*.h "$src"/src/gpu/weight_format.h "$src"/src/gpu/ggml_blocks.h "$src"/src/serve/submission.h "$src"/src/util/*.h "$0" -newer "$obj")" ]; then
    continue
  fi
  $cxx $flags -fsanitize=fuzzer-no-link -c "$src/$f" -o "$obj" &
  pids="$pids $!"
done
for p in $pids; do wait "$p" || exit 1; done

tensor_objs=""
for f in $tensor; do tensor_objs="$tensor_objs $out/obj/$(basename "$f" .cpp).o"; done
quantized_objs=""
for f in $quantized; do quantized_objs="$quantized_objs $out/obj/$(basename "$f" .cpp).o"; done
status=0
for target in safetensors gguf config tokenizer submission model_folder; do
  case $target in
    safetensors) deps="$out/obj/safetensors.o $tensor_objs" ;;
    gguf) deps="$out/obj/gguf.o $out/obj/safetensors.o $tensor_objs" ;;
    config) deps="$out/obj/safetensors.o $out/obj/model_files.o $out/obj/gguf.o $out/obj/gguf_model.o"
            deps="$deps $out/obj/tokenizer.o $out/obj/chat_template.o $tensor_objs $quantized_objs $(pkg-config --libs libpcre2-8 icu-uc)"
            for f in $arch; do deps="$deps $out/obj/$(basename "$f" .cpp).o"; done ;;
    tokenizer) deps="$out/obj/tokenizer.o $(pkg-config --libs libpcre2-8 icu-uc)" ;;
    submission) deps="$out/obj/submission.o" ;;
    model_folder) deps="$out/obj/safetensors.o $out/obj/model_files.o $out/obj/gguf.o $out/obj/gguf_model.o"
                  deps="$deps $out/obj/tokenizer.o $out/obj/chat_template.o $tensor_objs $quantized_objs"
                  for f in $arch; do deps="$deps $out/obj/$(basename "$f" .cpp).o"; done
                  deps="$deps $(pkg-config --libs libpcre2-8 icu-uc)" ;;
  esac
  $cxx $flags -fsanitize=fuzzer "$out/obj/fuzz_$target.o" $deps -o "$out/fuzz_$target"
  scratch="$out/corpus_$target"
  rm -rf "$scratch" && mkdir -p "$scratch"
  echo "fuzz_$target: ${seconds}s from $(ls "$src/tests/fuzz/corpus/$target" | wc -l) seeds"
  if ! "$out/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$out/crash_$target-" "$scratch" "$src/tests/fuzz/corpus/$target" >"$out/fuzz_$target.log" 2>&1; then
    echo "fuzz_$target FAILED (see $out/fuzz_$target.log):"
    tail -n 40 "$out/fuzz_$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/fuzz_$target.log" || true
  fi
done
exit $status
