. .baseline/setup_dev.sh
W=dist/wgfuse-linux-x64/wgfuse; L=".llamacpp/llamacpp-run .llamacpp"
# 1. long-prompt error with a float64 reference
python3 bench/baselines/qwen_check.py --wgfuse $W --tokenizer-dir /tmp/tok --out /tmp/qwen --models qwen3-1.7b,llama3.2-1b,0.5b --dtypes f32 --ref-dtype float64 --json $OUT/qc_f64.json > $OUT/qc_f64.md 2>$OUT/qc_f64.log; echo "qc f64 rc=$?"; cat $OUT/qc_f64.md
(cd bench/baselines && python3 -c "
from pathlib import Path; import qwen_check as q
q.build_model('1.5b', Path('/tmp/qwen'), Path('/tmp/tok'), 20261122)") 2>&1 | tail -1
ls /tmp/qwen
