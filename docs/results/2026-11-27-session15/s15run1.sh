# Session 15 run 1 (H100): session 14's committed tile rule (this tree, 6bc97c9 + --unsafe-no-robustness)
# against main 1f92592 (dist-main): prefill_bench.sh at 512, 1,024, 4,000 tokens, 0.5B (3 runs) and 1.5B
# (2 runs), f16 storage, plus the tree with Dawn's robustness off (what the bounds clamps cost);
# qwen_check.py (0.5B f16); decode with and without robustness; llama.cpp 0.7.0 Vulkan prefill, same weights.
BUNDLE=bundle1.tgz source .baseline/s15/common.sh
R=$OUT/r1; mkdir -p $R
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:;norobust:$D/wgfuse:--unsafe-no-robustness"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$V" timeout 240 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -8) | tee $R/qwen_check.txt
for r in 1 2 3; do for a in "" --unsafe-no-robustness; do echo "tree $a: $(timeout 60 $D/wgfuse generate -m $M5 --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --warmup 64 $a 2>&1 >/dev/null | grep -oE 'decode [0-9.]+ tok/s')"; done; done | tee $R/decode.txt
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
timeout 120 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 512,1024,4000 -n 0 -fa 1 -r 5 -o md 2>$R/lb05.log | tee $R/llamabench_05b.md
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 VARIANTS="$V" timeout 200 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert failed"
timeout 100 $L llama-bench -m /tmp/gg/15.gguf -ngl 99 -p 512,1024,4000 -n 0 -fa 0,1 -r 3 -o md 2>$R/lb15.log | tee $R/llamabench_15b.md
for f in $R/pf/profile/*-4000.log $R/pf/profile/*-512.log; do echo "== $f"; grep -E "^(qkv|o_proj|gate|down|attn|atten|one)" $f | awk '{print $1, $3}' | tr '\n' ' '; echo; done | tee $R/profiles.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
