# Session 21 run 1: the persistent decoder with weights loaded ahead (variant part "ahead") against
# the step decoder and the persistent decoder without it, 0.5B and 1.5B, positions 16-144.
set -x
source .baseline/s21/common.sh
R=$OUT/r1; mkdir -p $R
P="--prompt-ids $(seq -s, 1000 1015) -n 128 --warmup 64 --temp 0"
dec() {  # label, model, extra
  for rep in 1 2; do
    timeout 90 $D/wgfuse generate -m $2 $P $3 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed: $(tail -2 $R/$1-$rep.log)"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); x=d.get('decode',{}); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'))"
  done
}
{
dec steps $M5 ""
dec pers $M5 "--decode persistent"
dec pers-ahead $M5 "--decode persistent --persistent-variant split+down=4+ahead"
dec pers-ahead-d5 $M5 "--decode persistent --persistent-variant split+down=5+ahead"
dec pers-ahead-d2 $M5 "--decode persistent --persistent-variant split+down=2+ahead"
dec pers-ahead-whole $M5 "--decode persistent --persistent-variant split+ahead"
dec pers-ahead-wg132 $M5 "--decode persistent --persistent-wg 132 --persistent-variant split+down=4+ahead"
dec pers-ahead-wg264 $M5 "--decode persistent --persistent-wg 264 --persistent-variant split+down=4+ahead"
dec pers-wg264 $M5 "--decode persistent --persistent-wg 264"
dec steps-again $M5 ""
} 2>&1 | grep -v "^+" | tee $R/decode.txt
M15=$(build 1.5b)
{
dec steps15 $M15 ""
dec pers15 $M15 "--decode persistent"
dec pers15-ahead $M15 "--decode persistent --persistent-variant split+down=4+ahead"
dec pers15-ahead-wg264 $M15 "--decode persistent --persistent-wg 264 --persistent-variant split+down=4+ahead"
} 2>&1 | grep -v "^+" | tee -a $R/decode.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
