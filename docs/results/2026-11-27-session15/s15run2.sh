# Session 15 run 2 (H100): attend_prompt_tiled with the next key tile prefetched into registers, the rows'
# max through subgroup shuffles and probabilities stored transposed (this tree) against the previous kernel
# (6bc97c9's build, dist-main): prefill_bench.sh at 512, 1,024, 4,000 tokens, 0.5B (3 runs) and 1.5B
# (2 runs), also with --prefill-attention tiled at every length; correctness: the 4,000-token prompt's logits
# and 8 greedy tokens, tiled against blocks, and qwen_check.py with the tiled kernel forced; llama.cpp.
BUNDLE=bundle2.tgz source .baseline/s15/common.sh
R=$OUT/r2; mkdir -p $R
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
cmp_logits() {  # model label: tiled (new, old) against blocks (new), 4,000-token prompt, 8 greedy tokens
  for v in new-tiled:$D/wgfuse:tiled new-blocks:$D/wgfuse:blocks old-tiled:dist-main/wgfuse-linux-x64/wgfuse:tiled; do
    IFS=: read -r n b a <<<"$v"
    timeout 60 $b generate -m $1 --prompt-ids $(ids 4000) -n 8 --temp 0 --ctx 4096 --prefill-attention $a --dump-logits /tmp/$2-$n.npy --json /tmp/$2-$n.json >/dev/null 2>&1 || echo "$2 $n failed"
  done
  python3 - $2 <<'P'
import json, sys, numpy as np
m = sys.argv[1]; ref = np.load(f'/tmp/{m}-new-blocks.npy').astype(np.float64)
rt = json.load(open(f'/tmp/{m}-new-blocks.json'))['generated_ids']
for n in ('new-tiled', 'old-tiled'):
    x = np.load(f'/tmp/{m}-{n}.npy').astype(np.float64)
    print(m, n, 'vs new-blocks: max |diff| / max |logit|', float(np.abs(x - ref).max() / np.abs(ref).max()),
          'tokens equal', json.load(open(f'/tmp/{m}-{n}.json'))['generated_ids'] == rt)
P
}
cmp_logits $M5 0.5b | tee $R/logits.txt
V="old:dist-main/wgfuse-linux-x64/wgfuse:;new:$D/wgfuse:;newtiled:$D/wgfuse:--prefill-attention tiled"
OUT=$R/pf MODEL=$M5 REPS=3 VARIANTS="$V" timeout 220 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf.txt
(cd bench/baselines && timeout 120 python3 qwen_check.py --wgfuse ../../$D/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --wgfuse-arg=--prefill-attention=tiled --json $R/qwen_check.json 2>&1 | tail -7) | tee $R/qwen_check.txt
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
timeout 100 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 512,1024,4000 -n 0 -fa 1 -r 5 -o md 2>$R/lb05.log | tee $R/llamabench_05b.md
M15=$(build 1.5b)
cmp_logits $M15 1.5b | tee -a $R/logits.txt
OUT=$R/pf15 MODEL=$M15 REPS=2 VARIANTS="$V" timeout 180 bench/baselines/prefill_bench.sh 2>&1 | grep -E "^\|" | tee $R/pf15.txt
$L convert_hf_to_gguf $M15 --outfile /tmp/gg/15.gguf --outtype f16 > $R/convert15.log 2>&1 || echo "convert failed"
timeout 80 $L llama-bench -m /tmp/gg/15.gguf -ngl 99 -p 512,1024,4000 -n 0 -fa 1 -r 3 -o md 2>$R/lb15.log | tee $R/llamabench_15b.md
for f in $R/pf/profile/*.log $R/pf15/profile/*-4000.log; do echo "== $f"; grep -E "^(attention|one)" $f | awk '{print $1, $3, $7}' | tr '\n' ' '; echo; done | tee $R/profiles.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
