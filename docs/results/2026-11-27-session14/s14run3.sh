# Session 14 run 3 (H100): the new tile rule (64 x 64 residual products split K 4 ways where the sums fit;
# Q/K/V 64 x 64; gate/up 128 x 128) against main (dist-main): prefill_bench.sh (5 interleaved runs at 512,
# 1,024, 4,000 tokens, profiles), then qwen_check.py (0.5B, f32 storage: logits and 32 greedy tokens
# against transformers, one prompt over 512 tokens), and single-stream decode unchanged.
BUNDLE=bundle3.tgz source .baseline/s14/common.sh
R=$OUT/r3; mkdir -p $R
OUT=$R/pf MODEL=$M5 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;tiles:$D/wgfuse:" timeout 300 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
(cd bench/baselines && timeout 200 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f32 --json $R/qwen_check.json 2>&1 | tail -8) | tee $R/qwen_check.txt
for d in dist-main dist; do echo "$d: $(timeout 60 $d/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 16 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s')"; done | tee $R/decode.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
