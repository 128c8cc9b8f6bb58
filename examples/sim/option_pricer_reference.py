"""CPU reference of examples/sim/option_pricer.wgsl in double precision: the same path of each
individual (the same uniforms from the counter-based RNG, Box-Muller and the exact log-space GBM
step in double), its discounted call payoff. wgfuse runs it as the workload's "reference"."""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wgfuse_sim as ws  # noqa: E402

S0, STRIKE, RATE, VOL, MATURITY = 100.0, 105.0, 0.05, 0.2, 1.0
STREAM_PATH = 16


def unit_open(h):
    return ((h >> 8) + 0.5) / 16777216.0


def episode(e):
    steps = e["steps"]
    dt = MATURITY / steps
    log_s = math.log(S0)
    for t in range(steps):
        h = ws.hash5(e["seed"], STREAM_PATH + e["episode"], e["generation"], e["individual"], t)
        u1, u2 = unit_open(h), unit_open(ws.pcg_hash(h ^ 0x9E3779B9))
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        log_s += (RATE - 0.5 * VOL * VOL) * dt + VOL * math.sqrt(dt) * z
    return {"fitness": math.exp(-RATE * MATURITY) * max(math.exp(log_s) - STRIKE, 0.0)}


if __name__ == "__main__":
    ws.serve(episode)
