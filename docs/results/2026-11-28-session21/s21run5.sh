# Session 21 run 5: the persistent decoder with its staged vector laid out by column-group halves
# (conflict-free vec4 reads) — dist — against the build before (dist-main: the "ahead" build of
# runs 1-3, without it the kernel of main). 0.5B and 1.5B (grid 132: 256 is not co-resident there).
set -x
export BUNDLE=bundle5.tgz
source .baseline/s21/common.sh
R=$OUT/r5; mkdir -p $R
dec() {  # label, binary dir, model, prompt length, n, extra
  for rep in 1 2; do
    timeout 120 $2/wgfuse-linux-x64/wgfuse generate -m $3 --prompt-ids $(ids $4) -n $5 --warmup 64 --temp 0 --ctx 4096 $6 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed: $(tail -2 $R/$1-$rep.log)"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); x=d.get('decode',{}); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('workgroups'), x.get('checked_tokens'))"
  done
}
PP="--decode persistent --decode-check 32"
{
dec steps dist $M5 16 128 ""
dec main-pers dist-main $M5 16 128 "$PP"
dec pers dist $M5 16 128 "$PP"
dec pers-ahead dist $M5 16 128 "$PP --persistent-variant split+down=4+ahead"
dec pers-wg132 dist $M5 16 128 "$PP --persistent-wg 132"
dec pers-wg264 dist $M5 16 128 "$PP --persistent-wg 264"
dec pers-d2 dist $M5 16 128 "$PP --persistent-variant split+down=2"
dec pers-whole dist $M5 16 128 "$PP --persistent-variant split"
dec steps-long dist $M5 4000 64 ""
dec pers-long dist $M5 4000 64 "$PP"
dec steps-again dist $M5 16 128 ""
} 2>&1 | grep -v "^+" | tee $R/decode.txt
M15=$(build 1.5b)
{
dec steps15 dist $M15 16 128 ""
dec main-pers15 dist-main $M15 16 128 "$PP --persistent-wg 132"
dec pers15 dist $M15 16 128 "$PP --persistent-wg 132"
dec pers15-ahead dist $M15 16 128 "$PP --persistent-wg 132 --persistent-variant split+down=4+ahead"
} 2>&1 | grep -v "^+" | tee -a $R/decode.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
