# Session 24 run 6: does a cold driver compile provoke the persistent decoder's stale read? Three of
# the four failures on record were a kernel's first run on a machine that had not compiled it. Here
# every process gets an empty NVIDIA shader cache of its own (and the disk cache off), so each run
# compiles its kernels afresh. main (0f09e81), 0.5B f16, 32 tokens all checked, one process at a time,
# for as long as the device budget lasts (each line written at once: a cut-off run keeps its lines).
BUNDLE=bundle5.txz source .baseline/s24/common.sh
R=$OUT/r6; mkdir -p $R /tmp/s6; S=/tmp/s6
M5=$(build 0.5b); echo "built $M5 $(date +%T)" | tee -a $R/decode.txt
for i in $(seq 0 99); do
  t0=$(date +%s.%N)
  __GL_SHADER_DISK_CACHE=0 __GL_SHADER_DISK_CACHE_PATH=/tmp/glc$i timeout 60 dist-m/wgfuse-linux-x64/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 32 --temp 0 --ctx 512 --decode persistent --decode-check 32 --json $S/cold-$i.json > /dev/null 2>$S/cold-$i.log || echo "cold-$i exit $?" | tee -a $R/decode.txt
  echo "cold-$i $(python3 -c "import json; d=json.load(open('$S/cold-$i.json')); x=d.get('decode',{}); print(x.get('mode'), 'load', round(d['load_ms']/1e3,2), (x.get('fallback_reason') or '')[:160])") wall $(python3 -c "print(round($(date +%s.%N)-$t0,1))")" | tee -a $R/decode.txt
done
