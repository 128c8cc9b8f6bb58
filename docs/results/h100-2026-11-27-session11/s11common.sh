for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
mkdir -p /tmp/bundle && tar xzf .baseline/s11/bundle.tgz -C /tmp/bundle && rm -rf dist && cp -r /tmp/bundle/dist dist
cp /tmp/bundle/scripts/serve_join.sh /tmp/bundle/scripts/persist_sweep.sh /tmp/bundle/scripts/random_qwen.py bench/baselines/; cp /tmp/bundle/scripts/serve_load.py bench/
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
[ -d /tmp/qwen ] || (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('0.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-* | head -1); D=dist/wgfuse-linux-x64
