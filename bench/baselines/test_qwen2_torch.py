#!/usr/bin/env python3
"""Checks qwen2_torch.py's decoder on the CPU against a double-precision numpy Qwen2 written here.

    /usr/bin/python3 bench/baselines/test_qwen2_torch.py

Random tiny Qwen2 folders at odd sizes (GQA, untied and tied heads, bf16 and sharded files), the
decoder's prompt pass and decode steps (eager mode, static KV cache) against a reference that
recomputes the whole sequence without a cache: every step's logits within 1e-4 of max|logit| (f32),
the same greedy tokens. The CUDA modes need a GPU and run only where one is present.
"""

import json
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qwen2_torch as q  # noqa: E402

TOL_F32 = 1e-4


def ref_logits(tensors, cfg, ids):
    """float64 logits at every position of `ids`, straight from the safetensors names."""
    t = {k: v.double().numpy() for k, v in tensors.items()}
    d, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd, eps, n = d // H, cfg["rms_norm_eps"], len(ids)

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def rope(x):  # x [n, heads, hd]; pairs (i, i + hd/2)
        half = hd // 2
        ang = np.arange(n)[:, None] * cfg["rope_theta"] ** (-2.0 * np.arange(half) / hd)
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)

    x = t["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p, a = f"model.layers.{i}.", f"model.layers.{i}.self_attn."
        h = norm(x, t[p + "input_layernorm.weight"])
        qh = rope((h @ t[a + "q_proj.weight"].T + t[a + "q_proj.bias"]).reshape(n, H, hd))
        kh = rope((h @ t[a + "k_proj.weight"].T + t[a + "k_proj.bias"]).reshape(n, KV, hd))
        vh = (h @ t[a + "v_proj.weight"].T + t[a + "v_proj.bias"]).reshape(n, KV, hd)
        att = np.zeros((n, H, hd))
        for head in range(H):
            kv = head // (H // KV)
            s = qh[:, head] @ kh[:, kv].T / np.sqrt(hd)
            s[np.triu_indices(n, 1)] = -np.inf
            p_ = np.exp(s - s.max(-1, keepdims=True))
            att[:, head] = (p_ / p_.sum(-1, keepdims=True)) @ vh[:, kv]
        x = x + att.reshape(n, H * hd) @ t[a + "o_proj.weight"].T
        h = norm(x, t[p + "post_attention_layernorm.weight"])
        g, u = h @ t[p + "mlp.gate_proj.weight"].T, h @ t[p + "mlp.up_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ t[p + "mlp.down_proj.weight"].T
    head = t["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else t["lm_head.weight"]
    return norm(x, t["model.norm.weight"]) @ head.T


def tiny_config(d, layers, heads, kv_heads, ffn, vocab, tied):
    return {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
            "hidden_size": d, "intermediate_size": ffn, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
            "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "tie_word_embeddings": tied}


def decode_with_logits(model, prompts, tokens):
    """The decoder's eager run, keeping every step's logits: the prompt pass, then decode steps."""
    rows = []
    forward = model.forward

    def keep(ids, pos0):
        out = forward(ids, pos0)
        rows.append(out.clone())
        return out

    model.forward = keep
    try:
        model.prefill(prompts)
        for _ in range(tokens - 1):
            model.decode_step()
    finally:
        model.forward = forward
    P = prompts.shape[1]
    return model.out[:, P:P + tokens].tolist(), torch.stack(rows, 1).double().numpy()  # [B, tokens, V]


class DecoderMatchesReference(unittest.TestCase):
    def run_case(self, cfg, prompt, tokens, sequences=1, seed=3, bf16=False, shards=1):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            q.write_random_model(d, cfg, seed)
            tensors = q.read_safetensors(d / "model.safetensors")
            if bf16 or shards > 1:
                rewrite(d, tensors, bf16, shards)
                tensors = q.load_tensors(d)  # the reference reads the same (rounded) values
            mcfg = q.load_config(d)
            w = q.load_weights(d, mcfg, torch.float32, torch.device("cpu"))
            model = q.Qwen2Decoder(mcfg, w, sequences, len(prompt) + tokens)
            seqs = q.sequence_prompts(prompt, sequences, mcfg["vocab"], rotate_ids=True)
            with torch.no_grad():
                gen, logits = decode_with_logits(model, torch.tensor(seqs), tokens)
        for s in range(sequences):
            self.assertEqual(len(gen[s]), tokens)
            # Teacher forcing on the decoder's own tokens: every row is compared even after a split.
            ref = ref_logits(tensors, cfg, seqs[s] + gen[s][:-1])[len(prompt) - 1:]
            err = np.abs(logits[s] - ref).max(-1) / np.abs(ref).max(-1)
            self.assertLessEqual(err.max(), TOL_F32, f"sequence {s}: worst step {err.argmax()}")
            ref_tokens = ref.argmax(-1).tolist()
            self.assertEqual(gen[s], ref_tokens, f"sequence {s}: greedy tokens differ from the reference")
        return gen

    def test_gqa_untied_odd_sizes(self):
        cfg = tiny_config(d=40, layers=3, heads=4, kv_heads=2, ffn=72, vocab=61, tied=False)
        gen = self.run_case(cfg, [5, 17, 3], tokens=11)
        self.assertGreater(len(set(gen[0])), 1, "a constant output would hide a broken cache")

    def test_tied_byte_vocab_batched_sequences_rotate_the_prompt(self):
        cfg = tiny_config(d=32, layers=2, heads=2, kv_heads=1, ffn=88, vocab=256, tied=True)
        gen = self.run_case(cfg, list(b"Hi!"), tokens=9, sequences=3)
        self.assertNotEqual(gen[0], gen[1], "rotated prompts should give other tokens")

    def test_bf16_sharded_folder(self):
        cfg = tiny_config(d=24, layers=2, heads=3, kv_heads=3, ffn=40, vocab=97, tied=False)
        self.run_case(cfg, [90, 1, 2, 50, 7], tokens=6, bf16=True, shards=2)

    def test_sdpa_matches_manual_attention(self):
        if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
            self.skipTest(f"torch {torch.__version__} has no scaled_dot_product_attention")
        cfg = tiny_config(d=32, layers=2, heads=4, kv_heads=2, ffn=48, vocab=50, tied=True)
        with tempfile.TemporaryDirectory() as tmp:
            q.write_random_model(tmp, cfg, 5)
            mcfg = q.load_config(tmp)
            w = q.load_weights(tmp, mcfg, torch.float32, torch.device("cpu"))
            outs = []
            for attn in ("manual", "sdpa"):
                m = q.Qwen2Decoder(mcfg, w, 2, 12, attention=attn)
                with torch.no_grad():
                    outs.append(decode_with_logits(m, torch.tensor([[1, 2, 3], [4, 5, 6]]), 8))
        self.assertEqual(outs[0][0], outs[1][0])
        np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=0, atol=1e-4 * np.abs(outs[0][1]).max())

    def test_a_wrong_weight_fails_the_check(self):
        """The comparison can fail: one changed weight in the decoder puts its logits outside the tolerance."""
        cfg = tiny_config(d=32, layers=1, heads=2, kv_heads=2, ffn=64, vocab=40, tied=True)
        with tempfile.TemporaryDirectory() as tmp:
            q.write_random_model(tmp, cfg, 9)
            t = q.read_safetensors(Path(tmp) / "model.safetensors")
            mcfg = q.load_config(tmp)
            w = q.load_weights(tmp, mcfg, torch.float32, torch.device("cpu"))
        w["layers"][0]["wo"][3, 5] += 0.25
        model = q.Qwen2Decoder(mcfg, w, 1, 8)
        with torch.no_grad():
            gen, logits = decode_with_logits(model, torch.tensor([[1, 2, 3]]), 5)
        ref = ref_logits(t, cfg, [1, 2, 3] + gen[0][:-1])[2:]
        self.assertGreater((np.abs(logits[0] - ref).max(-1) / np.abs(ref).max(-1)).max(), 10 * TOL_F32)


def rewrite(d, tensors, bf16, shards):
    """Rewrites model.safetensors as bf16 and/or `shards` files with an index, as save_pretrained does."""
    (d / "model.safetensors").unlink()
    names = list(tensors)
    weight_map = {}
    for s in range(shards):
        part = {n: tensors[n] for n in names[s::shards]}
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors" if shards > 1 else "model.safetensors"
        write_bf16_or_f32(d / fname, part, bf16)
        weight_map.update({n: fname for n in part})
    if shards > 1:
        (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def write_bf16_or_f32(path, tensors, bf16):
    if not bf16:
        q.write_safetensors(path, tensors)
        return
    header, blobs, off = {}, [], 0
    for n, t in tensors.items():
        b = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        header[n] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


class ModelFolderErrors(unittest.TestCase):
    def folder(self, tmp, **changes):
        cfg = tiny_config(d=16, layers=1, heads=2, kv_heads=1, ffn=32, vocab=20, tied=False)
        cfg.update(changes)
        q.write_random_model(tmp, cfg, 1)
        return cfg

    def test_missing_config_field_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.folder(tmp)
            cfg = json.loads((Path(tmp) / "config.json").read_text())
            del cfg["rms_norm_eps"]
            (Path(tmp) / "config.json").write_text(json.dumps(cfg))
            with self.assertRaisesRegex(q.ModelError, r"config.json: field 'rms_norm_eps' is missing"):
                q.load_config(tmp)

    def test_missing_and_misshapen_tensors_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.folder(tmp)
            t = q.read_safetensors(Path(tmp) / "model.safetensors")
            del t["lm_head.weight"]
            q.write_safetensors(Path(tmp) / "model.safetensors", t)
            with self.assertRaisesRegex(q.ModelError, r"tensor lm_head.weight is missing"):
                q.load_weights(tmp, q.load_config(tmp), torch.float32, torch.device("cpu"))
            t["lm_head.weight"] = torch.zeros(20, 15)
            q.write_safetensors(Path(tmp) / "model.safetensors", t)
            with self.assertRaisesRegex(q.ModelError, r"lm_head.weight has shape \[20, 15\], expected \[20, 16\]"):
                q.load_weights(tmp, q.load_config(tmp), torch.float32, torch.device("cpu"))

    def test_truncated_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.folder(tmp)
            f = Path(tmp) / "model.safetensors"
            f.write_bytes(f.read_bytes()[:-4])
            with self.assertRaisesRegex(q.ModelError, r"data_offsets"):
                q.read_safetensors(f)


class WgfuseJson(unittest.TestCase):
    def read(self, obj):
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "run.json"
            p.write_text(json.dumps(obj))
            return q.wgfuse_sequences(p)

    def test_generate_json(self):
        seqs, prompt = self.read({"prompt_ids": [1, 2], "generated_ids": [5, 6, 7], "decode_tok_s": 3.0})
        self.assertEqual((seqs, prompt), ([[5, 6, 7]], [1, 2]))

    def test_nested_tiny_json_per_sequence(self):
        seqs, _ = self.read({"strategies": [{"name": "single", "tokens": [[1, 2], [3, 4]]}]})
        self.assertEqual(seqs, [[1, 2], [3, 4]])

    def test_absent_tokens_fail_clearly(self):
        with self.assertRaisesRegex(q.ModelError, r"no generated token ids .*top-level keys: strategies"):
            self.read({"strategies": [{"name": "single", "tok_s": 3}]})

    def test_compare_counts_the_identical_prefix(self):
        r = q.compare_tokens([[1, 2, 3, 4]], [[1, 2, 9]])
        self.assertFalse(r["tokens_equal"])
        self.assertEqual(r["min_identical_prefix"], 2)
        self.assertTrue(q.compare_tokens([[1, 2, 3, 4]], [[1, 2]])["tokens_equal"])  # wgfuse stopped at EOS


class BenchCommand(unittest.TestCase):
    def test_eager_bench_on_cpu_checks_tokens_and_writes_a_table(self):
        """End to end on the CPU: write-tiny, a fake wgfuse JSON holding the reference tokens, bench, table."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            self.assertEqual(q.main(["write-tiny", "--out", str(tmp / "m"), "--d", "32", "--layers", "2",
                                     "--heads", "2", "--kv-heads", "1", "--seed", "4"]), 0)
            cfg = json.loads((tmp / "m" / "config.json").read_text())
            t = q.read_safetensors(tmp / "m" / "model.safetensors")
            ids = list(b"ab")
            for _ in range(6):  # the reference's own greedy run
                ids.append(int(ref_logits(t, cfg, ids)[-1].argmax()))
            (tmp / "wg.json").write_text(json.dumps({"tokens": [ids[2:]]}))
            args = ["bench", "--model", str(tmp / "m"), "--prompt", "ab", "--tokens", "6", "--reps", "1",
                    "--warmup", "0", "--modes", "eager", "--device", "cpu", "--label", "tiny",
                    "--wgfuse-json", str(tmp / "wg.json"), "--out", str(tmp / "out")]
            self.assertEqual(q.main(args), 0)
            rec = json.loads((tmp / "out" / "tiny-f32-eager.json").read_text())
            self.assertTrue(rec["tokens_equal"], rec)
            # Other tokens from "wgfuse" fail the run.
            (tmp / "wg.json").write_text(json.dumps({"tokens": [[ids[2] + 1] + ids[3:]]}))
            self.assertEqual(q.main(args), 1)


@unittest.skipUnless(torch.cuda.is_available(), "CUDA modes need a GPU")
class CudaModes(unittest.TestCase):
    def test_every_mode_gives_the_eager_tokens(self):
        cfg = tiny_config(d=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=256, tied=True)
        with tempfile.TemporaryDirectory() as tmp:
            q.write_random_model(tmp, cfg, 2)
            mcfg = q.load_config(tmp)
            w = q.load_weights(tmp, mcfg, torch.float32, torch.device("cuda"))
            prompts = torch.tensor(q.sequence_prompts(list(b"xyz"), 4, 256, True), device="cuda")
            timer = q.Timer(torch.device("cuda"))
            results = {}
            for mode in ("eager", "graph", "compile_graph", "compile_ro"):
                m = q.Qwen2Decoder(mcfg, w, 4, 3 + 16)
                results[mode] = q.run_decoder_mode(mode, m, prompts, 16, 1, 1, timer)[1]
        for mode, gen in results.items():
            self.assertEqual(gen, results["eager"], mode)


if __name__ == "__main__":
    unittest.main(verbosity=2)
