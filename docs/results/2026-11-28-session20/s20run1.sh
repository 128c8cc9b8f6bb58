# Session 20 run 1 (experiment build, not kept): where a decode step's time goes, by leaving stages out.
# Step decoder: WGFUSE_DROP lists stages not dispatched; persistent: skip=N bits (qkv 1, attention 2,
# o 4, gate/up 8, down 16, head 32) skip a stage's work but keep its barrier. Timing only.
set -x
source .baseline/s20/common.sh
R=$OUT/r1; mkdir -p $R
P="--prompt-ids $(seq -s, 1000 1015) -n 128 --warmup 64 --temp 0"
dec() {  # label, env, extra
  for rep in 1 2; do
    env $2 timeout 60 $D/wgfuse generate -m $M5 $P $3 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', d['dispatches_per_step'])"
  done
}
{
dec steps X=1 ""
for s in qkv short o gateup down qkv,short,o,gateup,down; do dec "drop-$s" WGFUSE_DROP=$s ""; done
dec steps-again X=1 ""
dec pers X=1 "--decode persistent"
for k in 1 2 4 8 16 32 31 63; do dec "pers-skip$k" X=1 "--decode persistent --decode-check 0 --persistent-variant split+down=4+skip=$k"; done
for w in 132 264 512; do dec "pers-wg$w" X=1 "--decode persistent --persistent-wg $w"; done
} 2>&1 | grep -v "^+" | tee $R/decode.txt
timeout 60 $D/wgfuse bench --suite barrier --json $R/barrier.json > $R/barrier.txt 2>&1; tail -15 $R/barrier.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
