# session 9 run 6: simgap request 1 (sim_variants.sh on the simgap branch d01bca6's binary)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p dist/wgfuse-linux-x64 && gunzip -c .baseline/sg/wgfuse.gz > dist/wgfuse-linux-x64/wgfuse && gunzip -c .baseline/sg/lib.gz > dist/wgfuse-linux-x64/libwebgpu_wrapper.so && chmod +x dist/wgfuse-linux-x64/wgfuse
tar xzf .baseline/sg/scripts.tgz
mkdir -p $OUT/sv1 && OUT=$OUT/sv1 timeout 330 bench/baselines/sim_variants.sh > $OUT/sv1/stdout.txt 2>&1; echo rc=$?
cat $OUT/sv1/summary.md; cd $OUT && tar czf sv1.tgz sv1 && rm -rf sv1
