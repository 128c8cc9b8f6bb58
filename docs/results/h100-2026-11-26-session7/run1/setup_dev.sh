# there: loader, binaries, tokenizer
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p dist/wgfuse-linux-x64 && gunzip -c .baseline/cur/wgfuse.gz > dist/wgfuse-linux-x64/wgfuse && gunzip -c .baseline/cur/lib.gz > dist/wgfuse-linux-x64/libwebgpu_wrapper.so && chmod +x dist/wgfuse-linux-x64/wgfuse
for d in .baseline/main-*; do cp dist/wgfuse-linux-x64/libwebgpu_wrapper.so $d/; done
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
export PYTHONUNBUFFERED=1
