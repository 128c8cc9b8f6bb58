# Session 17 run 1 (H100): this tree (gate/up split along K at short prompts; prefill tiles in two stages,
# one barrier a step) against main 03de905 (dist-main). Correctness first (logits against main, qwen_check),
# then prefill_bench 0.5B (main, tree, tree with one stage), the split sweep, 1.5B, quantized prefill.
BUNDLE=bundle1.tgz source .baseline/s17/common.sh
source .baseline/s17/fns.sh
R=$OUT/r1; mkdir -p $R
$D/wgfuse info 2>&1 | grep -i "workgroupstorage" | tee $R/info.txt
for n in 512 1024; do cmp_bins $M5 0.5b $n; done | tee $R/logits.txt
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16,f32 --json $R/qwen_check.json 2>&1 | tail -6) | tee $R/qwen_check.txt
V="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:;stages1:$D/wgfuse::WGFUSE_PREFILL_STAGES=1"
OUT=$R/pf5 MODEL=$M5 REPS=3 VARIANTS="$V" timeout 200 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf5.txt
for s in 1 2 3 4; do gate_up_us $M5 512 --prefill-tile 128x128x$s; done 2>&1 | tee $R/sweep5.txt
for s in 1 2; do gate_up_us $M5 1024 --prefill-tile 128x128x$s; done 2>&1 | tee -a $R/sweep5.txt
for s in 1 4; do gate_up_us $M5 4000 --prefill-tile 64x64x$s; done 2>&1 | tee -a $R/sweep5.txt
for q in q8_0 q4_k; do OUT=$R/q$q MODEL=$M5 REPS=2 DTYPE=$q PROFILE=0 LENGTHS=512 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:" timeout 60 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/q$q.txt; done
M15=$(build 1.5b)
OUT=$R/pf15 MODEL=$M15 REPS=2 VARIANTS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:" timeout 150 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|chunk" | tee $R/pf15.txt
for s in 1 2 3; do gate_up_us $M15 512 --prefill-tile 128x128x$s; done 2>&1 | tee $R/sweep15.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
