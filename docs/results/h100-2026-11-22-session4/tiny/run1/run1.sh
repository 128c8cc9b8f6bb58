#!/bin/bash
# tinyseq run 1: the new tiny kernel (B) against session 3's (O, main's dist) on one sequence and
# many; threads; layers (per-layer cost); a sequences sweep; PyTorch eager + graph.
set -u
B=.carry/h_tinyseq/wgfuse
O=dist/wgfuse-linux-x64/wgfuse
R="$OUT/r1"; mkdir -p "$R"
M="--d 64 --layers 4 --heads 2 --tokens 64"
t() { local name=$1; shift; timeout 60 "$@" >"$R/$name.txt" 2>&1; local rc=$?
  printf '%-16s rc=%d ' "$name" $rc; grep -E "^fused" "$R/$name.txt" | sed 's/.*(qkv/(qkv/' | tr -d '\n'; echo
  grep -E "^(eager|batched|layer|single) " "$R/$name.txt" | awk '{printf "    %-8s %12s tok/s %8s ms %8s gpu_ms %s %s\n",$1,$2,$4,$5,$8,$9}'; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for i in 1 2 3; do
  t old-s1-$i $O tiny $M --mode single --repeats 5 --check
  t new-s1-$i $B tiny $M --mode single --repeats 5 --check
done
for th in 128 256 1024; do t new-t$th $B tiny $M --mode single --threads $th --repeats 5 --check; done
for l in 1 2; do
  t old-l$l $O tiny --d 64 --layers $l --heads 2 --tokens 64 --mode single --repeats 5
  t new-l$l $B tiny --d 64 --layers $l --heads 2 --tokens 64 --mode single --repeats 5
done
t new-all $B tiny $M --mode all --repeats 3 --check --json "$R/new-all.json"
t old-many $O tiny $M --sequences 16384 --mode single --repeats 3 --check
for th in 64 128 256; do t new-many-t$th $B tiny $M --sequences 16384 --mode single --threads $th --repeats 3 --check; done
timeout 100 $B tiny --sweep --sweep-d 64 --sweep-layers 4 --heads 2 --tokens 64 \
  --sweep-sequences 1,16,132,264,528,1056,2112,4224,8448,16384,32768,65536 --mode single --repeats 3 --check \
  --json "$R/many-sweep.json" >"$R/many-sweep.txt" 2>&1; echo "sweep rc=$?"; cat "$R/many-sweep.txt"
export PYTHONUNBUFFERED=1
OUT=$R/torch WGFUSE=$B SEQUENCES=1 MODES=eager,graph REPS=5 timeout 90 bench/baselines/run_tiny.sh >"$R/torch.txt" 2>&1
echo "torch rc=$?"; tail -12 "$R/torch.txt"
tar czf "$OUT/r1.tgz" -C "$OUT" r1
