# Session 19 run 3: the committed tree (9680284) against main (be1d04d's binary): prefill of shorter and
# middle prompts (100, 200, 300, 2,048 tokens; 3 runs); q8_0 against f16 per kernel at 512 tokens.
set -x
BUNDLE=bundle2.tgz source .baseline/s19/common.sh
R=$OUT/r3; mkdir -p $R
VS="main:dist-main/wgfuse-linux-x64/wgfuse:;tree:$D/wgfuse:"
OUT=$R/pf MODEL=$M5 REPS=3 LENGTHS=100,200,300,2048 PROFILE=0 VARIANTS="$VS" timeout 200 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
for dt in f16 q8_0; do
  OUT=$R/$dt MODEL=$M5 REPS=3 LENGTHS=512 DTYPE=$dt VARIANTS="$dt:$D/wgfuse:" timeout 80 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\||^== |gate_up|down|qkv|attention|o_proj|one pass" | tee -a $R/q8.txt
done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
