#!/usr/bin/env bash
# Prefill of this build against another (e.g. main's) in one call: prefill_bench.sh over
# VARIANTS (5 interleaved runs per variant and prompt length of 512, 1,024 and 4,000 tokens, one
# --profile-prefill table per variant and length), results in $OUT (prefill.md, runs/, profile/).
#   OUT=/some/dir [BASE_WGFUSE=/path/to/main/wgfuse] bench/baselines/prefill_sweep.sh
# Variants: base (BASE_WGFUSE, if set), blocks (this build, --prefill-attention blocks: the
# attention of 16 x 16 blocks), tiled (this build, --prefill-attention tiled: the tiled online
# softmax).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
W=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
v="blocks:$W:--prefill-attention blocks;tiled:$W:--prefill-attention tiled"
[[ -n ${BASE_WGFUSE:-} ]] && v="base:$BASE_WGFUSE:;$v"
export VARIANTS=${VARIANTS:-$v}
export REPS=${REPS:-5} LENGTHS=${LENGTHS:-512,1024,4000}
exec bench/baselines/prefill_bench.sh
