# Session 31 run 2: the final rule (keys split 2 ways where a chunk's tiles make < 512 workgroups;
# tiled from 192 tokens) against main (m: aa0975e), and main against llama.cpp 0.7.0's Vulkan backend
# in the same call on the same weights (the 0.5B folder converted to an F16 GGUF by its
# convert_hf_to_gguf): prefill 512 / 1,024 / 4,000, decode 128 tokens after 16 and after 4,000.
# Predicted from run 1: 0.5B prefill +6% at 512, +2.5% at 1,024, +2% at 2,048, +1.5% at 200-300,
# 4,000 level; 1.5B +3% at 512.
START=$(date +%s); BUNDLE=bundle-2.txz source .baseline/s31/common.sh
R=/tmp/rn; mkdir -p $R /tmp/gg; O=$OUT/run2.txt
L=".baseline/s31/llamacpp-run .baseline/llama"
lgn() {  # label, binary dir, model, prompt length, extra: logits of 8 tokens after the prompt
  timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n 8 --temp 0 --ctx 4096 $5 --dump-logits $R/$1.npy --json $R/$1.json > /dev/null 2>$R/$1.log || echo "$1 failed: $(tail -2 $R/$1.log)"
}
{
M5=$(build 0.5b); M15=$(build 1.5b); echo "built $(date +%T)"
for n in 200 512 2048; do lgn m-$n dist-m $M5 $n ""; lgn t-$n dist-t $M5 $n ""; cmp t-$n m-$n; done
lgn m15-512 dist-m $M15 512 ""; lgn t15-512 dist-t $M15 512 ""; cmp t15-512 m15-512
(cd bench/baselines && timeout 150 python3 qwen_check.py --wgfuse ../../dist-t/wgfuse-linux-x64/wgfuse --tokenizer-dir /tmp/tok --out /tmp/qc --models 0.5b --dtypes f16 --json $R/qwen_check.json 2>&1 | tail -8)
echo "checks $(date +%T)"
for rep in 1 2 3; do for n in 200 300 512 1024 2048 4000; do
  pre m-$n dist-m $M5 $n $rep ""; pre t-$n dist-t $M5 $n $rep ""
done; done
for rep in 1 2; do for n in 512 1024; do pre m15-$n dist-m $M15 $n $rep ""; pre t15-$n dist-t $M15 $n $rep ""; done; done
echo "prefill $(date +%T)"
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05-F16.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed: $(tail -3 $R/convert05.log)"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
timeout 150 $L llama-bench -m /tmp/gg/05-F16.gguf -ngl 99 -fa 1 -p 4000,512,1024,4000 -n 128 -d 0,4000 -r 3 -o md 2>$R/lb05.log
echo "llama.cpp $(date +%T)"
for rep in 1 2 3; do
  dec steps-16 dist-m /tmp/gg/05-F16.gguf 16 128 $rep ""
  dec steps-4000 dist-m /tmp/gg/05-F16.gguf 4000 64 $rep ""
  dec pers-16 dist-m /tmp/gg/05-F16.gguf 16 128 $rep "--decode persistent --decode-check 8"
  dec pers-4000 dist-m /tmp/gg/05-F16.gguf 4000 64 $rep "--decode persistent --decode-check 8"
  pre gm-512 dist-m /tmp/gg/05-F16.gguf 512 $rep ""; pre gt-512 dist-t /tmp/gg/05-F16.gguf 512 $rep ""
  pre gt-1024 dist-t /tmp/gg/05-F16.gguf 1024 $rep ""; pre gt-4000 dist-t /tmp/gg/05-F16.gguf 4000 $rep ""
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r2.tgz *.json *.log 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
