# Session 31 (from 24): the setup every GPU run starts with (sourced from the repository root on the GPU machine).
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
mkdir -p /tmp/bundle && python3 -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall('/tmp/bundle')" .baseline/s31/$BUNDLE
for b in /tmp/bundle/*/; do n=$(basename $b); mkdir -p dist-$n/wgfuse-linux-x64 && cp /tmp/bundle/libwebgpu_wrapper.so $b/wgfuse dist-$n/wgfuse-linux-x64/; done
mkdir -p /tmp/tok && gunzip -c .baseline/tok/tokenizer.json.gz > /tmp/tok/tokenizer.json && cp .baseline/tok/tokenizer_config.json /tmp/tok/
build() { (cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
print(q.build_model('$1', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122))") 2>&1 | tail -1; }
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
dec() {  # label, binary dir, model, prompt length, n, rep, extra
  local t0=$(date +%s.%N)
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n $5 --warmup 64 --temp 0 --ctx 4096 $7 --json $R/$1-$6.json > /dev/null 2>$R/$1-$6.log || echo "$1 failed: $(tail -2 $R/$1-$6.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$6.json')); x=d.get('decode',{}); print('$1', $6, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', d['weight_format'], round(d['weight_bytes_per_token']/1e6,1), 'MB/tok', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'), 'load', round(d['load_ms']/1e3,2), 'wall', round($(date +%s.%N)-$t0,1), (x.get('fallback_reason') or '')[:160])"
}
pre() {  # label, binary dir, model, prompt length, rep, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 1 --warmup 1 --temp 0 --ctx 4096 $6 --json $R/$1-$5.json > /dev/null 2>$R/$1-$5.log || echo "$1 failed: $(tail -2 $R/$1-$5.log)"
  python3 -c "import json; d=json.load(open('$R/$1-$5.json')); print('$1', $5, 'prefill', round(d['prefill_tok_s'],1), 'tok/s')"
}
logits() {  # label, binary dir, model, extra
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids 16) -n 24 --temp 0 --ctx 4096 $4 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed"
}
cmp() { python3 -c "
import numpy as np, json; a=np.load('$R/$1.npy'); b=np.load('$R/$2.npy')
ta=json.load(open('$R/$1.json'))['generated_ids']; tb=json.load(open('$R/$2.json'))['generated_ids']
print('$1 vs $2: max|a-b|/max|b| =', float(np.abs(a-b).max()/np.abs(b).max()), 'tokens equal:', ta==tb, 'bitwise:', bool((a==b).all()))"; }
