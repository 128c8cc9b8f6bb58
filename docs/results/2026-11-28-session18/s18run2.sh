# Session 18 run 2: the driver's statistics per kernel, labelled (this tree prints each kernel's
# label under --dump-shaders), for the prompts of 512 (f16, q8_0), 1,024 and 4,000 tokens, the
# persistent decoder, and session 17's two-stage matmul build (variant/wgfuse); --ir once.
set -x
BUNDLE=bundle2.tgz source .baseline/s18/common.sh
rm -rf dist-variant && cp -a dist dist-variant && cp /tmp/bundle/variant/wgfuse dist-variant/wgfuse-linux-x64/
R=$OUT/r2; mkdir -p $R
stats() {  # label binary-dir generate-args...
  local l=$1 b=$2; shift 2
  timeout 120 $b/wgfuse-linux-x64/wgfuse generate -m $M5 --temp 0 --ctx 4096 --dump-shaders --verbose "$@" 2> /tmp/dump-$l.txt > /dev/null
  echo "$l rc $?"
  SPIRV_AS=.baseline/s18/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump-$l.txt \
    --tool .baseline/s18/vk_pipeline_stats --out /tmp/st-$l $EXTRA 2>&1 | tail -3
  mkdir -p $R/$l && cp /tmp/st-$l/stats.* $R/$l/
}
EXTRA=--ir stats f16-512 dist --prompt-ids $(ids 512) -n 4 --dtype f16
ls -la /tmp/st-f16-512 | head; cp /tmp/st-f16-512/*.ir* $R/f16-512/ 2>/dev/null
stats q8_0-512 dist --prompt-ids $(ids 512) -n 4 --dtype q8_0
stats q4_k-512 dist --prompt-ids $(ids 512) -n 4 --dtype q4_k
stats f16-1024 dist --prompt-ids $(ids 1024) -n 4 --dtype f16
stats f16-4000 dist --prompt-ids $(ids 4000) -n 4 --dtype f16
stats persistent dist --prompt-ids $(ids 16) -n 4 --dtype f16 --decode persistent
stats twostage-512 dist-variant --prompt-ids $(ids 512) -n 4 --dtype f16
stats twostage-4000 dist-variant --prompt-ids $(ids 4000) -n 4 --dtype f16
cut -c1-220 $R/f16-512/stats.md
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
