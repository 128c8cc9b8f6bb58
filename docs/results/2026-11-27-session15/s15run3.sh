# Session 15 run 3 (H100): the normed products' (Q/K/V, gate/up) time per tile, forced with --prefill-tile
# (128x128, 128x96, 128x64, 64x128x1x2, 64x96x1x2, and the rule), 0.5B and 1.5B f16 at 512, 1,024, 4,000
# tokens: generate --profile-prefill=5 (each dispatch in its own pass), µs a call; llama.cpp's prefill again
# with a 4,000-token test first (run 2's pp512 scattered: 16,721 ± 1,077).
BUNDLE=bundle3.tgz source .baseline/s15/common.sh
R=$OUT/r3; mkdir -p $R
ids() { awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151643 }'; }
sweep() {
  for n in 512 1024 4000; do for t in auto 128x128 128x96 128x64 64x128x1x2 64x96x1x2; do
    timeout 40 $D/wgfuse generate -m $1 --prompt-ids $(ids $n) -n 1 --temp 0 --ctx 4096 --warmup 1 --prefill-tile $t --profile-prefill=5 > $R/$2-$n-$t.log 2>&1 || echo "$2 $n $t failed"
    echo "$2 $n $t $(grep -E '^(qkv_rope|gate_up_silu|one pass)' $R/$2-$n-$t.log | awk '{ if ($1 == "one") print "pass", $4; else print $1, $3 }' | tr '\n' ' ')"
  done; done
}
sweep $M5 0.5b | tee $R/sweep.txt
L=".llamacpp/llamacpp-run .llamacpp"; mkdir -p /tmp/gg
$L convert_hf_to_gguf $M5 --outfile /tmp/gg/05.gguf --outtype f16 > $R/convert05.log 2>&1 || echo "convert failed"
timeout 100 $L llama-bench -m /tmp/gg/05.gguf -ngl 99 -p 4000,512,1024,512 -n 0 -fa 1 -r 5 -o md 2>$R/lb05.log | tee $R/llamabench_05b.md
M15=$(build 1.5b)
sweep $M15 1.5b | tee -a $R/sweep.txt
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
