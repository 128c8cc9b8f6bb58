# Tiny with the final binary (the two unmeasured kernel commits reverted).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export WGFUSE_WEBGPU_LIB=$PWD/dist/wgfuse-linux-x64/libwebgpu_wrapper.so
W=$PWD/dist/wgfuse-linux-x64/wgfuse
R=$OUT/tiny2; mkdir -p $R
M="--d 64 --layers 4 --heads 2 --tokens 64"
s() { grep -E "^(eager|batched|layer|single) " "$1" | awk '{printf "    %-8s %12s tok/s %8s gpu_ms\n",$1,$2,$5}'; grep -E "single_over_(eager|batched) " "$1" | tr -s ' ' | tr '\n' ' '; echo; }
timeout 60 $W tiny $M --mode single --repeats 5 --check --json $R/single.json > $R/single.txt 2>&1; echo "single:"; s $R/single.txt
for i in 1 2 3; do timeout 90 $W tiny $M --check --repeats 3 --json $R/all-$i.json > $R/all-$i.txt 2>&1; echo "all $i rc=$?"; s $R/all-$i.txt; done
timeout 60 $W tiny --sweep --sweep-d 64 --sweep-layers 4 --heads 2 --tokens 64 --sweep-sequences 1,132,1056,2112,4224,16384,29000 --mode single --repeats 3 --check --json $R/many-sweep.json > $R/many-sweep.txt 2>&1; echo "sweep rc=$?"; tail -9 $R/many-sweep.txt
cd $OUT && tar czf tiny2.tgz tiny2
