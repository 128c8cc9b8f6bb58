#!/usr/bin/env bash
# The prefill variants of the prefill branch in one call: prefill_bench.sh over VARIANTS (5
# interleaved runs per variant and prompt length of 512, 1,024 and 4,000 tokens, one
# --profile-prefill table per variant and length), results in $OUT (prefill.md, runs/, profile/).
#   OUT=/some/dir bench/baselines/prefill_sweep.sh    (repository root; dist/ built from this branch)
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
W=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
export VARIANTS=${VARIANTS:-"default:$W:;chunk2048:$W:--prefill-chunk 2048;chunk4096:$W:--prefill-chunk 4096;split4:$W:--prefill-tile 32x64x4;chunk4096-split4:$W:--prefill-chunk 4096 --prefill-tile 32x64x4"}
export REPS=${REPS:-5} LENGTHS=${LENGTHS:-512,1024,4000}
exec bench/baselines/prefill_bench.sh
