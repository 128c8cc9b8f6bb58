# Session 21 run 3: the persistent kernel's driver statistics (binary size: is the 24-layer loop
# unrolled into a kernel too large for the instruction cache?), and an EXPERIMENT build (dist-main)
# whose layer loop has a bound the compiler cannot see.
set -x
export BUNDLE=bundle3.tgz
source .baseline/s21/common.sh
R=$OUT/r3; mkdir -p $R
P="--prompt-ids $(seq -s, 1000 1015) -n 128 --warmup 64 --temp 0"
dec() {  # label, binary dir, model, extra
  for rep in 1 2; do
    timeout 90 $2/wgfuse generate -m $3 $P $4 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed: $(tail -2 $R/$1-$rep.log)"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); x=d.get('decode',{}); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'))"
  done
}
E=dist-main/wgfuse-linux-x64
{
dec steps $D $M5 ""
dec pers $D $M5 "--decode persistent"
dec pers-ahead $D $M5 "--decode persistent --persistent-variant split+down=4+ahead"
dec rtlayers $E $M5 "--decode persistent"
dec rtlayers-ahead $E $M5 "--decode persistent --persistent-variant split+down=4+ahead"
} 2>&1 | grep -v "^+" | tee $R/decode.txt
for b in $D $E; do for v in split+down=4 split+down=4+ahead; do
  n=$(basename $(dirname $b))-$v
  timeout 90 $b/wgfuse generate -m $M5 --prompt-ids $(ids 16) -n 4 --temp 0 --decode persistent --persistent-variant $v --dump-shaders --verbose 2> /tmp/dump.txt > /dev/null
  SPIRV_AS=.baseline/s21/spirv-as python3 bench/baselines/vk_pipeline_stats.py /tmp/dump.txt --tool .baseline/s21/vk_pipeline_stats --out /tmp/st-$n 2>&1 | tail -1
  cp /tmp/st-$n/stats.md $R/stats-$n.md; grep -i "persistent\|matvec\|attend" /tmp/st-$n/stats.md | cut -c1-60,300- | sed 's/{.*}//' | head -12
done; done
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
