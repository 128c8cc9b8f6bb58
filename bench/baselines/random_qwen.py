#!/usr/bin/env python3
"""Prints the folder of a random Qwen2.5 model at a real config (qwen_check.py's build_model, seed
20261122; built in MODELS unless already there; needs torch and transformers).

  bench/baselines/random_qwen.py MODELS TOKENIZER_DIR [NAME]     (NAME: 0.5b by default)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from qwen_check import build_model  # noqa: E402

if len(sys.argv) not in (3, 4):
    sys.exit(__doc__)
print(build_model(sys.argv[3] if len(sys.argv) == 4 else "0.5b", Path(sys.argv[1]), Path(sys.argv[2]), 20261122))
