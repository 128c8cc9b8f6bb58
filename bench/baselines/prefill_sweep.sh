#!/usr/bin/env bash
# The prefill variants of the prefill branch in one call: prefill_bench.sh over VARIANTS (5
# interleaved runs per variant and prompt length of 512, 1,024 and 4,000 tokens, one
# --profile-prefill table per variant and length), results in $OUT (prefill.md, runs/, profile/).
#   OUT=/some/dir bench/baselines/prefill_sweep.sh    (repository root; dist/ built from this branch)
# Variants: chunk512 (the previous default chunk); default (chunk 4096); WGFUSE_PREFILL=t8 (8 x 8
# outputs a thread in 128 x 128 and 64 x 128 tiles), =flash (attend_prompt_flash), both.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the output directory}"
W=${WGFUSE:-dist/wgfuse-linux-x64/wgfuse}
export VARIANTS=${VARIANTS:-"chunk512:$W:--prefill-chunk 512;default:$W:;t8:$W::WGFUSE_PREFILL=t8;flash:$W::WGFUSE_PREFILL=flash;t8flash:$W::WGFUSE_PREFILL=t8,flash"}
export REPS=${REPS:-5} LENGTHS=${LENGTHS:-512,1024,4000}
exec bench/baselines/prefill_bench.sh
