# Session 21 run 4: (a) the persistent decoder's stage time taken apart, EXPERIMENT build dist-main
# (WGFUSE_EXP: 1 products without weight loads, 2 stagings without activation loads; timing only,
# --decode-check 0); (b) the step decoder after 4,000 prompt tokens against 16, attention split sweep.
set -x
export BUNDLE=bundle4.tgz
source .baseline/s21/common.sh
R=$OUT/r4; mkdir -p $R
dec() {  # label, binary dir, prompt length, n, env, extra
  for rep in 1 2; do
    env $5 timeout 120 $2/wgfuse generate -m $M5 --prompt-ids $(ids $3) -n $4 --warmup 64 --temp 0 --ctx 4096 $6 --json $R/$1-$rep.json > /dev/null 2>$R/$1-$rep.log || echo "$1 failed: $(tail -2 $R/$1-$rep.log)"
    python3 -c "import json; d=json.load(open('$R/$1-$rep.json')); x=d.get('decode',{}); print('$1', $rep, round(d['decode_tok_s'],1), round(1e6/d['decode_tok_s'],1), 'us', x.get('mode'), x.get('variant'), x.get('checked_tokens'), d.get('attention'))"
  done
}
E=dist-main/wgfuse-linux-x64
{
dec steps $D 16 128 X=1 ""
for x in 0 1 2 3; do dec pers-exp$x $E 16 128 WGFUSE_EXP=$x "--decode persistent --decode-check 0"; done
dec pers-ahead-exp1 $E 16 128 WGFUSE_EXP=1 "--decode persistent --decode-check 0 --persistent-variant split+down=4+ahead"
dec short-c64 $D 16 64 X=1 ""
dec long-c64 $D 4000 64 X=1 ""
dec long-c32 $D 4000 64 X=1 "--attn-chunk 32"
dec long-c128 $D 4000 64 X=1 "--attn-chunk 128"
dec long-c256 $D 4000 64 X=1 "--attn-chunk 256"
dec long-c32-h7 $D 4000 64 X=1 "--attn-chunk 32 --attn-heads 7"
dec long-c16-h7 $D 4000 64 X=1 "--attn-chunk 16 --attn-heads 7"
dec short-c64-again $D 16 64 X=1 ""
} 2>&1 | grep -v "^+" | tee $R/decode.txt
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
