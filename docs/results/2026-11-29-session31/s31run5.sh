# Session 31 run 5 (issue 23): the decode matrix-vector kernels of 0.5B and 1.5B under every candidate
# tuning (wgfuse_kernel_bench: 200 calls a pass over rotating copies, 5 passes, checked against the
# reference), f16 against q8_0 and q5_0. Question: is the q8_0 LM head (run 3: 83 us for 145 MB, 42%
# of copy bandwidth, where f16's 273 MB take 74 us) held back by the rule's tuning (2 rows a team of
# 64, 256 threads: ~19,000 workgroups, each staging x)? If so another tuning shows it.
START=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
mkdir -p /tmp/kb && python3 -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall('/tmp/kb')" .baseline/s31/bundle-5.txz
export WGFUSE_WEBGPU_LIB=/tmp/kb/kb/libwebgpu_wrapper.so
R=/tmp/rn; mkdir -p $R; O=$OUT/run5.txt
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for dt in q8_0 f16 q5_0; do
  timeout 200 /tmp/kb/kb/wgfuse_kernel_bench --model 0.5B --kind all --dtype $dt --json $R/kb-05-$dt.json > $R/kb-05-$dt.txt 2>&1 || echo "$dt failed: $(tail -3 $R/kb-05-$dt.txt)"
  echo "$dt $(date +%T)"
done
timeout 150 /tmp/kb/kb/wgfuse_kernel_bench --model 1.5B --kind lm_head --dtype q8_0 --json $R/kb-15-q8_0.json > $R/kb-15-q8_0.txt 2>&1 || echo "1.5B failed"
} 2>&1 | tee -a $O
cd $R && tar czf $OUT/r5.tgz kb-* 2>/dev/null
echo "done $(( $(date +%s) - START )) s" | tee -a $O
