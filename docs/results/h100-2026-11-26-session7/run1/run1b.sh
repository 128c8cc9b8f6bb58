. .baseline/setup_dev.sh
W=dist/wgfuse-linux-x64/wgfuse; L=".llamacpp/llamacpp-run .llamacpp"
python3 .baseline/f32floor.py qwen3-1.7b llama3.2-1b 0.5b 2>&1 | grep "max rel"
# 2. llama.cpp baselines on the same random 0.5B folder (+1.5B)
M5=$(ls -d /tmp/qwen/qwen2.5-0.5b-random-*); M15=$(ls -d /tmp/qwen/qwen2.5-1.5b-random-*)
mkdir -p /tmp/gg
for m in 0.5b:$M5 1.5b:$M15; do n=${m%%:*}; d=${m#*:}
  $L convert_hf_to_gguf $d --outfile /tmp/gg/$n-f16.gguf --outtype f16 > $OUT/convert-$n.log 2>&1 || echo "convert $n failed"
  for q in Q8_0 Q4_0 Q4_K_M; do $L llama-quantize /tmp/gg/$n-f16.gguf /tmp/gg/$n-$q.gguf $q > /dev/null 2>&1 || echo "quant $q failed"; done
done
ls -la /tmp/gg
$L llama-bench -m /tmp/gg/0.5b-f16.gguf -m /tmp/gg/0.5b-Q8_0.gguf -m /tmp/gg/0.5b-Q4_0.gguf -m /tmp/gg/0.5b-Q4_K_M.gguf -ngl 99 -p 512,1024,4000 -n 128 -fa 1 -r 5 -o md 2>$OUT/lb05.log | tee $OUT/llamabench_05b.md
$L llama-bench -m /tmp/gg/1.5b-f16.gguf -m /tmp/gg/1.5b-Q8_0.gguf -m /tmp/gg/1.5b-Q4_K_M.gguf -ngl 99 -p 512 -n 128 -fa 1 -r 5 -o md 2>$OUT/lb15.log | tee $OUT/llamabench_15b.md
# 3. wgfuse in the same call: decode (128 after 16) and prefill (512/1024/4000), 5 reps
for r in 1 2 3 4 5; do for dt in f16 bf16; do for m in 0.5b:$M5 1.5b:$M15; do n=${m%%:*}; d=${m#*:}
  $W generate -m $d --prompt-ids $(seq -s, 1000 1015) -n 128 --temp 0 --dtype $dt --warmup 64 --json $OUT/dec-$n-$dt-$r.json >/dev/null 2>&1; done; done
  for p in 512 1024 4000; do $W generate -m $M5 --prompt-ids $(seq -s, 1000 $((999+p))) -n 1 --temp 0 --dtype f16 --ctx 4200 --json $OUT/pre-0.5b-$p-$r.json >/dev/null 2>&1; done; done
python3 - $OUT <<'P'
import json,sys,glob,statistics as s,collections
d=collections.defaultdict(list)
for f in glob.glob(sys.argv[1]+'/*-[0-9].json'):
    k=f.split('/')[-1].rsplit('-',1)[0]; j=json.load(open(f)); d[k].append(j['decode_tok_s'] if k.startswith('dec') else j['prefill_tok_s'])
for k,v in sorted(d.items()): print(k, 'median', round(s.median(v),1), 'min', round(min(v),1), 'max', round(max(v),1), [round(x) for x in v])
P
cd $OUT && tar czf raw.tgz *.json *.log && rm -f *-[0-9].json
