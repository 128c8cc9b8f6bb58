#!/usr/bin/env python3
"""PyTorch baselines for wgfuse's Qwen2 decoders (Qwen2.5-0.5B/1.5B and the tiny byte model).

One decoder written from config.json + safetensors (no transformers), run in several modes on
CUDA, each checked against wgfuse's greedy tokens before it is timed:

  eager          the decoder op by op from Python; the next token stays on the device (no sync per token)
  graph          the whole decode step (embedding -> layers -> LM head -> argmax writing the next token
                 into a device buffer, position += 1) captured in ONE CUDA graph, one replay per token
  compile_graph  the same step through torch.compile(mode="max-autotune-no-cudagraphs"), captured in
                 our own CUDA graph like `graph`
  compile_ro     the same step through torch.compile(mode="reduce-overhead") (Inductor's CUDA graphs),
                 one compiled call per token
  hf             transformers' generate (greedy, its default dynamic KV cache); decode rate from the
                 difference between a `tokens`-token and a 1-token generate
  cublas         the ceiling of a library matrix-vector kernel: only the products that read every weight
                 matrix once per token (fused qkv, o, fused gate|up, down per layer, LM head) in one CUDA
                 graph, no attention or norms; no tokens

Math: f32 storage runs in f32 with TF32 off (it must reproduce wgfuse's f32 tokens). f16 storage keeps
weights, activations, logits and the KV cache in fp16; the products are cuBLAS's fp16 GEMMs at PyTorch's
defaults (fp32 compute type, reduced-precision split-K reductions allowed); RMSNorm statistics and the
softmax run in f32, as transformers does. f16 tokens are reported as agreement with wgfuse's (whose f16
storage computes in f32), not required to be equal.
The KV cache is static ([layers, batch, kv_heads, prompt + tokens, head_dim], zero-filled) and attention
runs over all of it with a mask, so every step has the same shapes. Decode steps are timed with CUDA
events: `tokens - 1` steps after the prompt (the prompt pass gives the first token), as wgfuse counts.

Subcommands:
  bench       time the modes on one model folder and storage dtype; one JSON per mode into --out
  table       a markdown table from those JSONs (and wgfuse's run_qwen.sh speed JSONs)
  write-tiny  write a random tiny Qwen2 folder (config.json + model.safetensors, f32, byte vocabulary)
"""

import argparse
import datetime
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

MODES = ("eager", "graph", "compile_graph", "compile_ro", "hf", "cublas")
STORAGE = {"f32": torch.float32, "f16": torch.float16}


class ModelError(Exception):
    """A model folder that cannot be used; the message names the file and the field."""


# ---------------------------------------------------------------------------------------------
# Model folders: config.json + safetensors (one file or sharded with model.safetensors.index.json)

SAFETENSORS_DTYPES = {"F32": (np.float32, None), "F16": (np.float16, None), "BF16": (np.int16, torch.bfloat16)}


def read_safetensors(path):
    """name -> CPU tensor. The format is an 8-byte little-endian header length, a JSON header and
    the raw data; Debian has no safetensors package, so it is read here with numpy."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    if raw.size < 8:
        raise ModelError(f"{path}: too short for a safetensors file ({raw.size} bytes)")
    n = int.from_bytes(raw[:8].tobytes(), "little")
    if 8 + n > raw.size:
        raise ModelError(f"{path}: header length {n} runs past the end of the file ({raw.size} bytes)")
    header = json.loads(raw[8:8 + n].tobytes())
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in SAFETENSORS_DTYPES:
            raise ModelError(f"{path}: tensor {name} has dtype {t['dtype']} (supported: F32, F16, BF16)")
        np_dtype, view = SAFETENSORS_DTYPES[t["dtype"]]
        begin, end = t["data_offsets"]
        count = math.prod(t["shape"])
        if end - begin != count * np.dtype(np_dtype).itemsize or end > data.size:
            raise ModelError(f"{path}: tensor {name}: data_offsets {begin}..{end} do not hold shape {t['shape']}")
        a = torch.from_numpy(np.frombuffer(data[begin:end], dtype=np_dtype).copy()).reshape(t["shape"])
        out[name] = a.view(view) if view else a
    return out


def write_safetensors(path, tensors):
    """Writes name -> float32 tensor as an F32 safetensors file (data 8-byte aligned)."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        b = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_config(model_dir):
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise ModelError(f"{path}: missing")
    raw = json.loads(path.read_text())

    def field(key):
        if key not in raw:
            raise ModelError(f"{path}: field {key!r} is missing")
        return raw[key]

    theta = raw.get("rope_theta", (raw.get("rope_parameters") or {}).get("rope_theta"))
    if theta is None:
        raise ModelError(f"{path}: neither 'rope_theta' nor 'rope_parameters.rope_theta' is present")
    cfg = dict(
        vocab=int(field("vocab_size")), d=int(field("hidden_size")), ffn=int(field("intermediate_size")),
        layers=int(field("num_hidden_layers")), heads=int(field("num_attention_heads")),
        kv_heads=int(raw.get("num_key_value_heads", field("num_attention_heads"))),
        eps=float(field("rms_norm_eps")), theta=float(theta), tied=bool(raw.get("tie_word_embeddings", False)),
    )
    cfg["head_dim"] = int(raw.get("head_dim") or cfg["d"] // cfg["heads"])
    if cfg["heads"] % cfg["kv_heads"]:
        raise ModelError(f"{path}: num_attention_heads {cfg['heads']} is not a multiple of "
                         f"num_key_value_heads {cfg['kv_heads']}")
    if cfg["head_dim"] % 2:
        raise ModelError(f"{path}: head_dim {cfg['head_dim']} is odd (RoPE rotates pairs)")
    return cfg


def load_tensors(model_dir):
    model_dir = Path(model_dir)
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (model_dir / "model.safetensors").is_file():
        files = ["model.safetensors"]
    else:
        raise ModelError(f"{model_dir}: neither model.safetensors nor model.safetensors.index.json")
    tensors = {}
    for f in files:
        tensors.update(read_safetensors(model_dir / f))
    return tensors


def load_weights(model_dir, cfg, dtype, device):
    """The decoder's weights in `dtype` on `device`, q|k|v and gate|up concatenated for one product each."""
    t = load_tensors(model_dir)
    d, hd, H, KV, I = cfg["d"], cfg["head_dim"], cfg["heads"], cfg["kv_heads"], cfg["ffn"]

    def get(name, shape):
        if name not in t:
            raise ModelError(f"{model_dir}: tensor {name} is missing")
        if list(t[name].shape) != list(shape):
            raise ModelError(f"{model_dir}: tensor {name} has shape {list(t[name].shape)}, expected {list(shape)}")
        return t[name].to(device=device, dtype=dtype)

    w = {"embed": get("model.embed_tokens.weight", (cfg["vocab"], d)), "norm": get("model.norm.weight", (d,))}
    w["lm_head"] = w["embed"] if cfg["tied"] else get("lm_head.weight", (cfg["vocab"], d))
    w["layers"] = []
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        w["layers"].append(dict(
            ln1=get(p + "input_layernorm.weight", (d,)), ln2=get(p + "post_attention_layernorm.weight", (d,)),
            wqkv=torch.cat([get(a + "q_proj.weight", (H * hd, d)), get(a + "k_proj.weight", (KV * hd, d)),
                            get(a + "v_proj.weight", (KV * hd, d))]),
            bqkv=torch.cat([get(a + "q_proj.bias", (H * hd,)), get(a + "k_proj.bias", (KV * hd,)),
                            get(a + "v_proj.bias", (KV * hd,))]),
            wo=get(a + "o_proj.weight", (d, H * hd)),
            wgu=torch.cat([get(p + "mlp.gate_proj.weight", (I, d)), get(p + "mlp.up_proj.weight", (I, d))]),
            wdown=get(p + "mlp.down_proj.weight", (d, I)),
        ))
    return w


# ---------------------------------------------------------------------------------------------
# The decoder


def rms_norm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rotate(x, cos, sin):
    """RoPE on [.., T, heads, head_dim] with the halves convention (x1, x2) -> (x1 c - x2 s, x2 c + x1 s)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Qwen2Decoder(torch.nn.Module):
    """Static-shape Qwen2 decoder for `batch` sequences of up to `max_len` positions.

    State lives in buffers so a captured step replays in place: `tok` [batch] the last token,
    `pos` [1] its position, `out` [batch, max_len] every token by position, the KV caches."""

    def __init__(self, cfg, weights, batch, max_len, attention="manual"):
        super().__init__()
        if attention not in ("manual", "sdpa"):
            raise ValueError(f"attention must be manual or sdpa, not {attention!r}")
        self.cfg, self.batch, self.max_len, self.attention = cfg, batch, max_len, attention
        dev, dt = weights["embed"].device, weights["embed"].dtype
        P = lambda x: torch.nn.Parameter(x, requires_grad=False)  # parameters count as static in torch.compile
        self.embed, self.norm, self.lm_head = P(weights["embed"]), P(weights["norm"]), P(weights["lm_head"])
        self.layers = torch.nn.ModuleList()
        for lw in weights["layers"]:
            m = torch.nn.Module()
            for k, v in lw.items():
                setattr(m, k, P(v))
            self.layers.append(m)
        hd = cfg["head_dim"]
        inv = cfg["theta"] ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] * inv[None, :]
        self.register_buffer("cos", angles.cos().to(device=dev, dtype=dt))
        self.register_buffer("sin", angles.sin().to(device=dev, dtype=dt))
        # Zeros, not garbage: masked positions get probability 0, and 0 * NaN would be NaN.
        cache = (cfg["layers"], batch, cfg["kv_heads"], max_len, hd)
        self.register_buffer("k_cache", torch.zeros(cache, device=dev, dtype=dt))
        self.register_buffer("v_cache", torch.zeros(cache, device=dev, dtype=dt))
        self.register_buffer("key_pos", torch.arange(max_len, device=dev))
        self.register_buffer("tok", torch.zeros(batch, dtype=torch.long, device=dev))
        self.register_buffer("pos", torch.zeros(1, dtype=torch.long, device=dev))
        self.register_buffer("out", torch.zeros(batch, max_len, dtype=torch.long, device=dev))

    def attend(self, q, k_cache, v_cache, allowed):
        """q [B, T, H, hd] against the whole cache [B, KV, L, hd]; allowed [T, L] -> [B, T, H*hd]."""
        B, T, H, hd = q.shape
        KV = k_cache.shape[1]
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache, v_cache, attn_mask=allowed,
                                               enable_gqa=KV != H)
            return o.transpose(1, 2).reshape(B, T, H * hd)
        # Grouped query heads share their KV head by broadcasting: no copy of the cache.
        qg = q.view(B, T, KV, H // KV, hd).permute(0, 2, 3, 1, 4)  # [B, KV, group, T, hd]
        s = (qg @ k_cache.unsqueeze(2).transpose(-1, -2)).float() * (1.0 / math.sqrt(hd))
        p = torch.where(allowed, s, float("-inf")).softmax(-1).to(q.dtype)
        o = p @ v_cache.unsqueeze(2)  # [B, KV, group, T, hd]
        return o.permute(0, 3, 1, 2, 4).reshape(B, T, H * hd)

    def forward(self, ids, pos0):
        """ids [B, T] at positions pos0 .. pos0+T-1 (pos0 a [1] device tensor): writes the caches,
        returns the logits of the last position [B, vocab]."""
        c = self.cfg
        B, T = ids.shape
        H, KV, hd = c["heads"], c["kv_heads"], c["head_dim"]
        positions = pos0 + torch.arange(T, device=ids.device)
        cos, sin = self.cos[positions][:, None, :], self.sin[positions][:, None, :]
        allowed = self.key_pos[None, :] <= positions[:, None]  # causal over the static cache
        x = F.embedding(ids, self.embed)
        for i, layer in enumerate(self.layers):
            qkv = F.linear(rms_norm(x, layer.ln1, c["eps"]), layer.wqkv, layer.bqkv)
            q, k, v = qkv.split([H * hd, KV * hd, KV * hd], dim=-1)
            q = rotate(q.view(B, T, H, hd), cos, sin)
            k = rotate(k.view(B, T, KV, hd), cos, sin)
            self.k_cache[i].index_copy_(2, positions, k.transpose(1, 2))
            self.v_cache[i].index_copy_(2, positions, v.view(B, T, KV, hd).transpose(1, 2))
            x = x + F.linear(self.attend(q, self.k_cache[i], self.v_cache[i], allowed), layer.wo)
            gate, up = F.linear(rms_norm(x, layer.ln2, c["eps"]), layer.wgu).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.wdown)
        return F.linear(rms_norm(x[:, -1], self.norm, c["eps"]), self.lm_head)

    def prefill(self, prompts):
        """prompts [B, P] on the device: fills positions 0..P-1 and picks the token at P."""
        P = prompts.shape[1]
        self.pos.zero_()
        nxt = self.forward(prompts, self.pos).argmax(-1)
        self.out[:, :P].copy_(prompts)
        self.out[:, P].copy_(nxt)
        self.tok.copy_(nxt)
        self.pos.fill_(P)

    def decode_step(self):
        """One token for every sequence, all on the device: no Python value depends on the GPU."""
        nxt = self.forward(self.tok[:, None], self.pos).argmax(-1)
        self.tok.copy_(nxt)
        self.pos.add_(1)
        self.out.index_copy_(1, self.pos, nxt[:, None])


# ---------------------------------------------------------------------------------------------
# Runs and timing


class Timer:
    """CUDA events on a GPU, the wall clock on the CPU (local checks only)."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def __call__(self, fn):
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "all": values}


def sequence_prompts(prompt_ids, sequences, vocab, rotate_ids):
    """Sequence i's prompt: the ids shifted by i modulo the vocabulary (the tiny contract) when
    rotate_ids, else the same prompt for every sequence."""
    if sequences > 1 and not rotate_ids:
        return [list(prompt_ids)] * sequences
    return [[(t + i) % vocab for t in prompt_ids] for i in range(sequences)]


def capture(fn, reset=lambda: None):
    """A CUDA graph of fn(), after three warm-up calls on a side stream (lazy initialisation,
    autotuning and compilation happen there, never inside the capture), each after reset()."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            reset()
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def mark_state_static(model):
    """The buffers a step mutates keep their addresses, so compiled CUDA graphs may update them in place."""
    for b in (model.k_cache, model.v_cache, model.tok, model.pos, model.out):
        torch._dynamo.mark_static_address(b)


def run_decoder_mode(mode, model, prompts, tokens, reps, warmup, timer):
    """Times `tokens - 1` decode steps per rep; returns (ms per rep, generated ids per sequence)."""
    steps = tokens - 1
    P = prompts.shape[1]
    if mode == "eager":
        step = model.decode_step
    elif mode == "compile_ro":
        mark_state_static(model)
        compiled = torch.compile(model.decode_step, mode="reduce-overhead", fullgraph=True, dynamic=False)

        def step():
            torch.compiler.cudagraph_mark_step_begin()
            compiled()
    elif mode in ("graph", "compile_graph"):
        fn = model.decode_step
        if mode == "compile_graph":
            mark_state_static(model)
            fn = torch.compile(fn, mode="max-autotune-no-cudagraphs", fullgraph=True, dynamic=False)
        # From a fresh prompt pass each: warm-up steps never run past the cache, whatever `tokens` is.
        step = capture(fn, lambda: model.prefill(prompts)).replay
    else:
        raise ValueError(mode)

    def decode():
        for _ in range(steps):
            step()

    times, generated = [], None
    for r in range(warmup + reps):
        model.prefill(prompts)  # untimed: every rep decodes the same tokens from the same state
        ms = timer(decode)
        ids = model.out[:, P:P + tokens].tolist()
        if generated is None:
            generated = ids
        elif ids != generated:
            raise RuntimeError(f"{mode}: rep {r} generated other tokens than the first run")
        if r >= warmup:
            times.append(ms)
    return times, generated


def run_hf(model_dir, dtype, prompts, tokens, reps, warmup, timer, attn):
    import transformers
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn)
    model = model.to(prompts.device).eval()
    model.generation_config.eos_token_id = None  # always `tokens` tokens, as the other modes
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None, attention_mask=torch.ones_like(prompts))
    out = {}

    def gen(n):
        out["ids"] = model.generate(prompts, max_new_tokens=n, **kw)

    full, first = [], []
    with torch.no_grad():
        for r in range(warmup + reps):
            a, b = timer(lambda: gen(tokens)), timer(lambda: gen(1))
            if r >= warmup:
                full.append(a)
                first.append(b)
        gen(tokens)
    generated = out["ids"][:, prompts.shape[1]:].tolist()
    # Decode time = a `tokens` generate less a 1-token one (prompt pass + first token), per rep.
    times = [a - b for a, b in zip(full, first)]
    return times, generated, {"transformers": transformers.__version__, "hf_attn": attn,
                              "generate_ms": summary(full), "generate_1_ms": summary(first)}


def run_cublas(model, reps, warmup, timer, tokens):
    """Every weight matrix read once per token by F.linear on one vector, in one CUDA graph."""
    c, dev, dt = model.cfg, model.embed.device, model.embed.dtype
    g = torch.Generator(device=dev).manual_seed(1)
    vec = lambda n: torch.randn(1, n, device=dev, generator=g).to(dt)
    x, a, h = vec(c["d"]), vec(c["heads"] * c["head_dim"]), vec(c["ffn"])
    mats = [m for l in model.layers for m in ((l.wqkv, x), (l.wo, a), (l.wgu, x), (l.wdown, h))]
    mats.append((model.lm_head, x))

    def products():
        for w, v in mats:
            F.linear(v, w)

    graph = capture(products)
    steps = tokens - 1
    times = []
    for r in range(warmup + reps):
        ms = timer(lambda: [graph.replay() for _ in range(steps)])
        if r >= warmup:
            times.append(ms)
    weight_bytes = sum(w.numel() * w.element_size() for w, _ in mats)
    return times, {"weight_bytes_per_token": weight_bytes, "products_per_token": len(mats),
                   "weight_gb_s": summary([weight_bytes * steps / (ms * 1e6) for ms in times])}


# ---------------------------------------------------------------------------------------------
# wgfuse's tokens


def wgfuse_sequences(path):
    """The generated ids in a wgfuse --json file, one list per sequence. Reads `generated_ids`
    (wgfuse generate) or the first key named tokens / generated_ids / generated anywhere (wgfuse
    tiny) holding a list of ints or a list of such lists."""
    data = json.loads(Path(path).read_text())

    def as_sequences(v):
        if isinstance(v, list) and v and all(isinstance(t, int) for t in v):
            return [v]
        if isinstance(v, list) and v and all(isinstance(s, list) and s and all(isinstance(t, int) for t in s)
                                             for s in v):
            return v
        return None

    def walk(node):
        if isinstance(node, dict):
            for key in ("generated_ids", "tokens", "generated"):
                found = as_sequences(node.get(key))
                if found:
                    return found
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            return None
        for child in children:
            found = walk(child)
            if found:
                return found
        return None

    found = walk(data)
    if not found:
        keys = ", ".join(data) if isinstance(data, dict) else type(data).__name__
        raise ModelError(f"{path}: no generated token ids (looked for generated_ids / tokens / generated; "
                         f"top-level keys: {keys})")
    return found, data.get("prompt_ids") if isinstance(data, dict) else None


def compare_tokens(ours, theirs):
    """Per sequence both have: identical leading tokens over the tokens wgfuse generated (it may stop at EOS)."""
    per_seq = []
    for o, t in zip(ours, theirs):
        same = 0
        while same < min(len(o), len(t)) and o[same] == t[same]:
            same += 1
        per_seq.append({"identical_prefix": same, "compared": min(len(o), len(t))})
    equal = all(s["identical_prefix"] == s["compared"] for s in per_seq)
    return {"tokens_equal": equal, "sequences_compared": len(per_seq), "per_sequence": per_seq[:8],
            "min_identical_prefix": min(s["identical_prefix"] for s in per_seq)}


# ---------------------------------------------------------------------------------------------
# Subcommands


def parse_ids(text):
    if ".." in text:
        a, b = text.split("..")
        return list(range(int(a), int(b) + 1))
    return [int(t) for t in text.split(",") if t]


@torch.no_grad()
def cmd_bench(args):
    device = torch.device(args.device)
    dtype = STORAGE[args.dtype]
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # f32 must be f32 to match wgfuse's tokens
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    cfg = load_config(args.model)
    if args.prompt is not None:
        prompt = list(args.prompt.encode())
    else:
        prompt = parse_ids(args.prompt_ids)
    if not prompt or max(prompt) >= cfg["vocab"]:
        raise ModelError(f"prompt ids must be non-empty and below vocab_size {cfg['vocab']}")
    seqs = sequence_prompts(prompt, args.sequences, cfg["vocab"], rotate_ids=args.prompt is not None)
    prompts = torch.tensor(seqs, device=device)
    wg = None
    if args.wgfuse_json:
        wg, wg_prompt = wgfuse_sequences(args.wgfuse_json)
        if wg_prompt is not None and list(wg_prompt) != prompt:
            raise ModelError(f"{args.wgfuse_json}: prompt_ids {wg_prompt} differ from this run's {prompt}")
    weights = load_weights(args.model, cfg, dtype, device)
    model = Qwen2Decoder(cfg, weights, args.sequences, len(prompt) + args.tokens, args.attention)
    timer = Timer(device)
    args.out.mkdir(parents=True, exist_ok=True)
    label = args.label or Path(args.model).name
    failed = False
    for mode in args.modes.split(","):
        if mode not in MODES:
            raise ModelError(f"--modes: unknown mode {mode!r} (known: {', '.join(MODES)})")
        if device.type != "cuda" and mode not in ("eager",):
            print(f"[{label} {args.dtype} {mode}] skipped: needs CUDA", flush=True)
            continue
        # The decoder's attention is part of the path's name when it is not the default.
        path = f"{mode}+sdpa" if args.attention == "sdpa" and mode not in ("hf", "cublas") else mode
        rec = {"schema": "wgfuse.baseline.qwen2_torch/1", "label": label, "model": str(args.model),
               "config": cfg, "storage": args.dtype, "mode": mode, "path": path, "attention": args.attention,
               "sequences": args.sequences, "prompt_ids": prompt, "tokens": args.tokens,
               "decode_steps_timed": args.tokens - 1, "reps": args.reps, "warmup": args.warmup,
               "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
               "torch": torch.__version__,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        t0 = time.perf_counter()
        try:
            extra = {}
            if mode == "hf":
                times, gen, extra = run_hf(args.model, dtype, prompts, args.tokens, args.reps, args.warmup, timer,
                                           args.hf_attn)
            elif mode == "cublas":
                times, extra = run_cublas(model, args.reps, args.warmup, timer, args.tokens)
                gen = None
            else:
                times, gen = run_decoder_mode(mode, model, prompts, args.tokens, args.reps, args.warmup, timer)
            rec.update(extra)
            if gen is not None:
                rec["generated_ids"] = gen[:8]
                if wg:
                    rec.update(compare_tokens(gen, wg))
            steps = args.tokens - 1
            rec["decode_ms"] = summary(times)
            rec["decode_tok_s"] = summary([steps / ms * 1e3 for ms in times])  # per sequence
            rec["decode_tok_s_total"] = summary([args.sequences * steps / ms * 1e3 for ms in times])
            if wg and gen is not None and not rec["tokens_equal"] and args.dtype == "f32":
                failed = True
            msg = (f"{rec['decode_tok_s']['median']:.1f} tok/s per sequence "
                   f"[{rec['decode_tok_s']['min']:.1f}-{rec['decode_tok_s']['max']:.1f}]")
            if args.sequences > 1:
                msg += f", {rec['decode_tok_s_total']['median']:.0f} tok/s total"
            if "tokens_equal" in rec:
                msg += f", tokens equal to wgfuse: {rec['tokens_equal']} (prefix {rec['min_identical_prefix']})"
        except Exception as e:  # a mode that fails is recorded and the others still run
            rec["error"] = f"{type(e).__name__}: {e}"
            msg = "FAILED: " + rec["error"][:500]
            failed = True
        rec["elapsed_s"] = time.perf_counter() - t0
        print(f"[{label} {args.dtype} {path}] {msg}", flush=True)
        name = f"{label}-{args.dtype}-{path}" + (f"-s{args.sequences}" if args.sequences > 1 else "")
        (args.out / f"{name}.json").write_text(json.dumps(rec, indent=1))
        if device.type == "cuda":
            torch.compiler.reset()
            torch.cuda.empty_cache()
    return 1 if failed else 0


def cmd_table(args):
    """| path | storage | sequences | one column of decode tok/s per label | tokens equal to wgfuse |"""
    rows, labels = {}, []
    for f in sorted(args.dir.glob("*.json")):
        r = json.loads(f.read_text())
        if r.get("schema") != "wgfuse.baseline.qwen2_torch/1":
            continue
        if r["label"] not in labels:
            labels.append(r["label"])
        rows.setdefault((r["path"], r["storage"], r["sequences"]), {})[r["label"]] = r
    if args.wgfuse_speed:  # run_qwen.sh's speed/<size>-<dtype>-k<K>-<rep>.json
        runs = {}
        for f in sorted(args.wgfuse_speed.glob("*.json")):
            size, dtype, k, _ = f.stem.split("-")
            runs.setdefault((f"wgfuse K={k[1:]}", dtype, 1), {}).setdefault(size, []).append(
                json.loads(f.read_text())["decode_tok_s"])
        for key, by_size in runs.items():
            for size, v in by_size.items():
                label = next((l for l in labels if size.lower() in l.lower()), size)
                if label not in labels:
                    labels.append(label)
                rows.setdefault(key, {})[label] = {"decode_tok_s": summary(v), "wgfuse": True}
    order = {m: i for i, m in enumerate(("wgfuse",) + MODES)}
    path_order = lambda path: order.get(path.split()[0].split("+")[0], len(order))  # "wgfuse K=8", "graph+sdpa"
    head = ["path", "storage", "sequences"] + [f"{l} tok/s" for l in labels] + ["tokens equal to wgfuse"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (path, storage, seqs), by_label in sorted(rows.items(), key=lambda kv: (path_order(kv[0][0]), kv[0])):
        cells, eq = [], []
        for l in labels:
            r = by_label.get(l)
            if r is None:
                cells.append("")
            elif "error" in r:
                cells.append("failed")
            elif storage == "f32" and r.get("tokens_equal") is False:
                cells.append("tokens differ")  # not the same computation: no speed to compare
            else:
                s = r["decode_tok_s_total"] if seqs > 1 else r["decode_tok_s"]
                cell = f"{s['median']:.1f} [{s['min']:.1f}-{s['max']:.1f}]"
                if "weight_gb_s" in r:
                    cell += f" ({r['weight_gb_s']['median']:.0f} GB/s)"
                cells.append(cell)
            if r is None or "error" in r or r.get("wgfuse"):
                continue
            if "tokens_equal" in r:
                eq.append("yes" if r["tokens_equal"] else f"no ({r['min_identical_prefix']}/"
                          f"{min(s['compared'] for s in r['per_sequence'])})")
            elif r["mode"] == "cublas":
                eq.append("n/a")
            else:
                eq.append("unchecked")
        print(f"| {path} | {storage} | {seqs} | " + " | ".join(cells) + " | " + " / ".join(eq) + " |")
    return 0


def cmd_write_tiny(args):
    """A random tiny Qwen2 folder: byte vocabulary, FFN 4*d, tied embeddings, RoPE theta 10000."""
    d, H, KV = args.d, args.heads, args.kv_heads
    if d % H or H % KV or (d // H) % 2:
        raise ModelError(f"--d {d} --heads {H} --kv-heads {KV}: d must split into heads of even width and "
                         f"heads into kv-heads")
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
           "hidden_size": d, "intermediate_size": args.ffn or 4 * d, "num_hidden_layers": args.layers,
           "num_attention_heads": H, "num_key_value_heads": KV, "vocab_size": args.vocab,
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": not args.untied, "use_sliding_window": False, "attention_dropout": 0.0,
           "torch_dtype": "float32"}
    write_random_model(args.out, cfg, args.seed)
    print(f"wrote {args.out}: d={d} layers={args.layers} heads={H} kv_heads={KV} seed={args.seed}")
    return 0


def write_random_model(out, cfg, seed):
    """config.json + model.safetensors (f32) with random weights scaled like an initialised model,
    random biases and norm scales so that every tensor matters."""
    g = torch.Generator().manual_seed(seed)
    d, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = d // H
    rnd = lambda *shape, s=1.0: torch.randn(*shape, generator=g, dtype=torch.float64) * s
    t = {"model.embed_tokens.weight": rnd(V, d), "model.norm.weight": 1 + rnd(d, s=0.1)}
    if not cfg["tie_word_embeddings"]:
        t["lm_head.weight"] = rnd(V, d, s=d ** -0.5)
    for i in range(cfg["num_hidden_layers"]):
        p, a = f"model.layers.{i}.", f"model.layers.{i}.self_attn."
        t.update({p + "input_layernorm.weight": 1 + rnd(d, s=0.1),
                  p + "post_attention_layernorm.weight": 1 + rnd(d, s=0.1),
                  a + "q_proj.weight": rnd(H * hd, d, s=d ** -0.5), a + "q_proj.bias": rnd(H * hd, s=0.1),
                  a + "k_proj.weight": rnd(KV * hd, d, s=d ** -0.5), a + "k_proj.bias": rnd(KV * hd, s=0.1),
                  a + "v_proj.weight": rnd(KV * hd, d, s=d ** -0.5), a + "v_proj.bias": rnd(KV * hd, s=0.1),
                  a + "o_proj.weight": rnd(d, H * hd, s=(H * hd) ** -0.5),
                  p + "mlp.gate_proj.weight": rnd(I, d, s=d ** -0.5), p + "mlp.up_proj.weight": rnd(I, d, s=d ** -0.5),
                  p + "mlp.down_proj.weight": rnd(d, I, s=I ** -0.5)})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(out / "model.safetensors", t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench", help="time the modes on one model folder and storage dtype")
    b.add_argument("--model", type=Path, required=True, help="Qwen2 folder: config.json + safetensors")
    b.add_argument("--dtype", choices=tuple(STORAGE), default="f32", help="weight storage (default f32)")
    b.add_argument("--modes", default="eager,graph,compile_graph,hf,cublas", help=f"comma list of {', '.join(MODES)}")
    g = b.add_mutually_exclusive_group()
    g.add_argument("--prompt-ids", default="1000..1015", help="ids, comma-separated or A..B (default 1000..1015)")
    g.add_argument("--prompt", help="text whose bytes are the prompt (the tiny model); sequence i adds i to each byte")
    b.add_argument("--tokens", type=int, default=128, help="tokens to generate (default 128)")
    b.add_argument("--sequences", type=int, default=1, help="sequences decoded together (default 1)")
    b.add_argument("--reps", type=int, default=5)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--attention", choices=("manual", "sdpa"), default="manual",
                   help="masked attention by two batched products (default) or F.scaled_dot_product_attention")
    b.add_argument("--hf-attn", default="sdpa", help="transformers' attn_implementation (default sdpa)")
    b.add_argument("--wgfuse-json", type=Path, help="wgfuse's --json output of the same model, prompt and dtype")
    b.add_argument("--label", help="the model's column in the table (default: the folder name)")
    b.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    b.add_argument("--out", type=Path, required=True, help="folder for <label>-<dtype>-<mode>.json")
    t = sub.add_parser("table", help="markdown table from bench JSONs")
    t.add_argument("dir", type=Path)
    t.add_argument("--wgfuse-speed", type=Path, help="run_qwen.sh's $OUT/speed folder, for wgfuse's own rows")
    w = sub.add_parser("write-tiny", help="write a random tiny Qwen2 folder")
    w.add_argument("--out", type=Path, required=True)
    w.add_argument("--d", type=int, default=64)
    w.add_argument("--layers", type=int, default=4)
    w.add_argument("--heads", type=int, default=2)
    w.add_argument("--kv-heads", type=int, default=2)
    w.add_argument("--ffn", type=int, help="intermediate size (default 4*d)")
    w.add_argument("--vocab", type=int, default=256)
    w.add_argument("--untied", action="store_true", help="a separate lm_head.weight")
    w.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "bench" and (args.tokens < 2 or args.sequences < 1 or args.reps < 1):
        ap.error("bench: --tokens must be >= 2, --sequences and --reps >= 1")
    try:
        return {"bench": cmd_bench, "table": cmd_table, "write-tiny": cmd_write_tiny}[args.cmd](args)
    except ModelError as e:
        print(f"qwen2_torch.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
