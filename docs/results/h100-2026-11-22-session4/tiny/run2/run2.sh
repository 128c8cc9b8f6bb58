#!/bin/bash
# tinyseq run 2: variants of the new kernel (B) one change apart, against session 3's (O).
#  B1: the layer loop's bound read at run time (cannot be unrolled: code size)
#  B3: rows_dot's loop with a lane-dependent trip count (as session 3)
#  B5: no barriers at all (timing only, results wrong): what the barriers cost
#  B6: single's activations as scalar workgroup floats (as session 3)
set -u
C=.carry/h_tinyseq; for v in B B1 B3 B5 B6; do gunzip -c $C/$v.gz >/tmp/$v; chmod +x /tmp/$v; done
O=dist/wgfuse-linux-x64/wgfuse
R="$OUT/r2"; mkdir -p "$R"
M="--d 64 --layers 4 --heads 2 --tokens 64"
t() { local name=$1; shift; timeout 60 "$@" >"$R/$name.txt" 2>&1; local rc=$?
  printf '%-14s rc=%d ' "$name" $rc; grep -E "^fused" "$R/$name.txt" | sed 's/.*(qkv/(qkv/; s/; single.*//' | tr -d '\n'; echo
  grep -E "^(eager|batched|layer|single) " "$R/$name.txt" | awk '{printf "    %-8s %12s tok/s %8s ms %8s gpu_ms %s %s\n",$1,$2,$4,$5,$8,$9}'; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t O $O tiny $M --mode single --repeats 5 --check
for v in B B1 B3 B6; do t $v /tmp/$v tiny $M --mode single --repeats 5 --check; done
t B5-nobarrier /tmp/B5 tiny $M --mode single --repeats 5
t B-again /tmp/B tiny $M --mode single --repeats 5 --check
for th in 256 1024; do t B-t$th /tmp/B tiny $M --mode single --threads $th --repeats 5 --check; done
t B1-t1024 /tmp/B1 tiny $M --mode single --threads 1024 --repeats 5 --check
for l in 1 2; do t B-l$l /tmp/B tiny --d 64 --layers $l --heads 2 --tokens 64 --mode single --repeats 5; t B1-l$l /tmp/B1 tiny --d 64 --layers $l --heads 2 --tokens 64 --mode single --repeats 5; done
t B-tok16 /tmp/B tiny --d 64 --layers 4 --heads 2 --tokens 16 --mode single --repeats 5
for th in 64 128 256; do t B-many-t$th /tmp/B tiny $M --sequences 16384 --mode single --threads $th --repeats 3 --check; done
for v in B1 B3 B6; do t $v-many-t128 /tmp/$v tiny $M --sequences 16384 --mode single --threads 128 --repeats 3 --check; done
for th in 128 256; do
timeout 80 /tmp/B tiny --sweep --sweep-d 64 --sweep-layers 4 --heads 2 --tokens 64 --threads $th \
  --sweep-sequences 132,264,528,1056,2112,4224,8448,16384,29000 --mode single --repeats 3 --check \
  --json "$R/many-sweep-t$th.json" >"$R/many-sweep-t$th.txt" 2>&1; echo "sweep t$th rc=$?"; cat "$R/many-sweep-t$th.txt"
done
tar czf "$OUT/r2.tgz" -C "$OUT" r2
