# Session 21: the setup every GPU run starts with (sourced from the repository root on the GPU machine).
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
mkdir -p /tmp/bundle && tar xzf .baseline/s21/${BUNDLE:-bundle1.tgz} -C /tmp/bundle && rm -rf dist && cp -a /tmp/bundle/dist .
rm -rf dist-main; if [ -d /tmp/bundle/main ]; then cp -a dist dist-main && cp /tmp/bundle/main/* dist-main/wgfuse-linux-x64/; fi
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
build() { (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
print(q.build_model('$1', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122))") 2>&1 | tail -1; }
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
M5=$(build 0.5b); D=dist/wgfuse-linux-x64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
