#!/bin/bash
# tinyseq run 3 (final): C = B + embedding read by the first layer (no embed phase) + exact
# product steps unguarded; C2 = C + teams past the items skip their round (idle warps do no
# work). Final figures (3 x --mode all), many sequences, PyTorch (eager, graph, compile) against
# C2, the sequences sweep.
set -u
C=.carry/h_tinyseq; for v in B C C2; do gunzip -c $C/$v.gz >/tmp/$v; chmod +x /tmp/$v; done
O=dist/wgfuse-linux-x64/wgfuse
R="$OUT/r3"; mkdir -p "$R"
M="--d 64 --layers 4 --heads 2 --tokens 64"
t() { local name=$1; shift; timeout 60 "$@" >"$R/$name.txt" 2>&1; local rc=$?
  printf '%-14s rc=%d ' "$name" $rc; grep -E "^fused" "$R/$name.txt" | sed 's/.*(qkv/(qkv/; s/; single.*//' | tr -d '\n'; echo
  grep -E "^(eager|batched|layer|single) " "$R/$name.txt" | awk '{printf "    %-8s %12s tok/s %8s ms %8s gpu_ms %s %s\n",$1,$2,$4,$5,$8,$9}'
  grep -E "single_over_(eager|batched) " "$R/$name.txt" | tr -s ' ' | tr '\n' ' '; echo; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t O $O tiny $M --mode single --repeats 5 --check
for v in B C C2; do t $v /tmp/$v tiny $M --mode single --repeats 5 --check; done
for th in 256 1024; do t C2-t$th /tmp/C2 tiny $M --mode single --threads $th --repeats 5 --check; done
for i in 1 2 3; do for v in C C2; do t $v-all-$i /tmp/$v tiny $M --check --repeats 3 --json "$R/$v-all-$i.json"; done; done
for v in C C2; do t $v-many /tmp/$v tiny $M --sequences 16384 --mode single --repeats 3 --check --json "$R/$v-many.json"; done
export PYTHONUNBUFFERED=1
OUT=$R/torch WGFUSE=/tmp/C2 SEQUENCES=1 MODES=eager,graph,compile_graph REPS=5 timeout 120 bench/baselines/run_tiny.sh >"$R/torch.txt" 2>&1
echo "torch rc=$?"; grep -E "^\[|^\|" "$R/torch.txt" | tail -8
timeout 45 /tmp/C2 tiny --sweep --sweep-d 64 --sweep-layers 4 --heads 2 --tokens 64 \
  --sweep-sequences 1,16,132,264,528,1056,2112,4224,8448,16384,29000,32768,65536 --mode single --repeats 3 --check \
  --json "$R/many-sweep.json" >"$R/many-sweep.txt" 2>&1; echo "sweep rc=$?"; cat "$R/many-sweep.txt"
