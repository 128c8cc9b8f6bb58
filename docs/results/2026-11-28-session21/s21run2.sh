# Session 21 run 2: is the persistent decoder's stage time its scalar atomic activation traffic?
# dist-main here is an EXPERIMENT build (/tmp/plain.wgsl: `live` plain u32, no atomics; visibility
# across workgroups not guaranteed, so the decode check decides), dist the "ahead" build.
set -x
export BUNDLE=bundle2.tgz
source .baseline/s21/common.sh
R=$OUT/r2; mkdir -p $R
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
dec plain $E $M5 "--decode persistent"
dec plain-ahead $E $M5 "--decode persistent --persistent-variant split+down=4+ahead"
dec plain-ahead-check64 $E $M5 "--decode persistent --decode-check 64 --persistent-variant split+down=4+ahead"
dec plain-base $E $M5 "--decode persistent --persistent-variant base"
dec pers-base $D $M5 "--decode persistent --persistent-variant base"
dec steps-again $D $M5 ""
} 2>&1 | grep -v "^+" | tee $R/decode.txt
M15=$(build 1.5b)
{
dec steps15 $D $M15 ""
dec pers15-wg132 $D $M15 "--decode persistent --persistent-wg 132"
dec pers15-ahead-wg132 $D $M15 "--decode persistent --persistent-wg 132 --persistent-variant split+down=4+ahead"
dec plain15-ahead-wg132 $E $M15 "--decode persistent --persistent-wg 132 --persistent-variant split+down=4+ahead"
} 2>&1 | grep -v "^+" | tee -a $R/decode.txt
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
