# Session 15 run 4a (H100): this tree (the tiled prefill attention from 1,024 tokens on) against 6bc97c9
# (session 14's tree, dist-main), 0.5B f16: prefill_bench.sh (5 interleaved runs at 512, 1,024, 4,000
# tokens); the default kernel's logits and 8 greedy tokens against --prefill-attention blocks at 1,024 and
# 4,000 tokens; qwen_check.py (0.5B, f16 and f32 storage) with the tiled kernel forced; decode unchanged.
BUNDLE=bundle4.tgz source .baseline/s15/common.sh
R=$OUT/r4a; mkdir -p $R
source .baseline/s15/fns.sh
for n in 1024 4000; do cmp_logits $M5 0.5b $n; done | tee $R/logits.txt
V="base:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf MODEL=$M5 REPS=5 VARIANTS="$V" timeout 260 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16,f32 --generate-arg=--prefill-attention=tiled --json $R/qwen_check.json 2>&1 | tail -12) | tee $R/qwen_check.txt
for r in 1 2 3; do for d in dist-main dist; do echo "$d: $(timeout 60 $d/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 64 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s')"; done; done | tee $R/decode.txt
cd $OUT && tar czf r4a.tgz r4a && rm -rf r4a
