# The fp32 floor: transformers in float32 against float64 on the same prompts, qwen_check's metric.
import sys, torch, numpy as np
from pathlib import Path
sys.path.insert(0, "bench/baselines"); import qwen_check as q
from transformers import AutoModelForCausalLM
torch.backends.cuda.matmul.allow_tf32 = False; torch.set_float32_matmul_precision("highest")
dev = torch.device("cuda"); P = q.prompts(Path("/tmp/tok"), 20261122)
for name in sys.argv[1:]:
    d = sorted(Path("/tmp/qwen").glob(f"{'qwen2.5-' if name[0].isdigit() else ''}{name}-random-*"))[0]
    m64 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").to(dev).eval()
    m32 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").to(dev).eval()
    for pn in ("text1", "random600"):
        ids = q.prompts_for(P, m64.config.vocab_size)[pn]
        gen, _ = q.hf_greedy(m64, ids, set(), dev)
        r64 = q.hf_teacher_forced(m64, ids, gen, dev); r32 = q.hf_teacher_forced(m32, ids, gen, dev)
        err = ((r32.double() - r64).abs().amax(dim=1) / r64.abs().amax(dim=1)).max().item()
        print(f"{name} {pn}: transformers fp32 vs fp64 max rel err {err:.3g}", flush=True)
    del m64, m32; torch.cuda.empty_cache()
