"""What a workload file's Python CPU reference needs (docs/SIMULATIONS.md, "Workload files"):
the counter-based RNG of kernels/sim_rng.wgsl and sim_common.wgsl's init_uniform, bit for bit, and
the loop that answers wgfuse one episode per line. Pure Python (no NumPy needed). Copy it beside
your script, or import it from here.

    import wgfuse_sim as ws

    def episode(e):   # e: {"genome": [...], "steps", "seed", "generation", "episode"(, "data")}
        x = ws.init_uniform(e, 0, 0.05)
        ...
        return {"fitness": total}   # optionally "margin": the closest decision boundary

    ws.serve(episode)
"""

import json
import struct
import sys

M32 = 0xFFFFFFFF
STREAM_STATE = 2  # sim_common.wgsl


def f32(x):
    """x rounded to the nearest float32, as a Python float."""
    return struct.unpack("f", struct.pack("f", x))[0]


def pcg_hash(v):
    """The PCG hash of Jarzynski and Olano (JCGT 2020), as kernels/sim_rng.wgsl computes it."""
    state = (v * 747796405 + 2891336453) & M32
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & M32
    return ((word >> 22) ^ word) & M32


def hash4(a, b, c, d):
    return pcg_hash((pcg_hash((pcg_hash((pcg_hash(a & M32) + b) & M32) + c) & M32) + d) & M32)


def hash5(a, b, c, d, e):
    return pcg_hash((hash4(a, b, c, d) + e) & M32)


def unit_sym(h):
    """A multiple of 2^-23 in [-1, 1): exact in float32 (sim_common.wgsl)."""
    return (h >> 8) * (1.0 / 8388608.0) - 1.0


def init_uniform(e, k, scale):
    """Start-state variable k of episode e (sim_common.wgsl init_uniform): one float32 rounding."""
    return f32(f32(scale) * unit_sym(hash5(e["seed"], STREAM_STATE, e["generation"], e["episode"], k)))


def serve(episode):
    """Answers each request line on stdin with episode(request) as one JSON line on stdout."""
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(episode(json.loads(line))), flush=True)
