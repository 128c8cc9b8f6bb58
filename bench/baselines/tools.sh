# Sourced by the GPU scripts here, from the repository root: the CUDA compiler, and the wgfuse to
# measure (the newer of the package, scripts/package, and the build, unless WGFUSE names one) with
# its WebGPU library (beside it, else npm's bun-webgpu build).
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || NVCC=/usr/local/cuda/bin/nvcc
if [[ -z ${WGFUSE:-} ]]; then
  WGFUSE=build/wgfuse
  if [[ -x dist/wgfuse-linux-x64/wgfuse && ( ! -x build/wgfuse || dist/wgfuse-linux-x64/wgfuse -nt build/wgfuse ) ]]; then
    WGFUSE=dist/wgfuse-linux-x64/wgfuse
  fi
fi
if [[ -z ${WGFUSE_WEBGPU_LIB:-} && ! -f $(dirname "$WGFUSE")/libwebgpu_wrapper.so &&
      -f node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so ]]; then
  export WGFUSE_WEBGPU_LIB=$PWD/node_modules/bun-webgpu-linux-x64/libwebgpu_wrapper.so
fi
