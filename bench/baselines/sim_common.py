"""Shared definitions of wgfuse's simulation workloads for the Python baselines.

Everything here mirrors wgfuse (kernels/sim_*.wgsl, src/sim/*) exactly:
  * the counter-based RNG (PCG hash of Jarzynski and Olano, chained over key
    words) and the uniforms that are exact in float32, so that every
    implementation starts every individual from the same genome and state;
  * the workloads' sizes, genome layouts and GA settings;
  * the Market records, read from the file `wgfuse sim market --write-data`
    writes (float32, steps x 22) so that the prices are bit-identical.
The frameworks (sim_torch.py, sim_jax.py) implement the dynamics themselves.
docs/SIMULATIONS.md documents the equations.
"""

import json
import math
import os
import platform
import statistics
import time
import traceback

import numpy as np

M32 = np.uint64(0xFFFFFFFF)
STREAM_GENOME = 1
STREAM_STATE = 2
STREAM_SELECT = 3
STREAM_CROSS = 4
STREAM_MUTATE = 5

MARKET_RECORD = 22  # 6 features + 16 asset returns per step
SAMPLES = 64


def pcg_hash(v):
    """PCG hash on uint32 values held in uint64 arrays (wrapping arithmetic)."""
    v = np.asarray(v, dtype=np.uint64) & M32
    state = (v * np.uint64(747796405) + np.uint64(2891336453)) & M32
    word = (((state >> ((state >> np.uint64(28)) + np.uint64(4))) ^ state) * np.uint64(277803737)) & M32
    return ((word >> np.uint64(22)) ^ word) & M32


def hash4(a, b, c, d):
    h = pcg_hash(a)
    h = pcg_hash((h + np.asarray(b, dtype=np.uint64)) & M32)
    h = pcg_hash((h + np.asarray(c, dtype=np.uint64)) & M32)
    return pcg_hash((h + np.asarray(d, dtype=np.uint64)) & M32)


def hash5(a, b, c, d, e):
    return pcg_hash((hash4(a, b, c, d) + np.asarray(e, dtype=np.uint64)) & M32)


def unit_sym(h):
    """Multiples of 2^-23 in [-1, 1), exact in float32."""
    return (np.asarray(h >> np.uint64(8), dtype=np.float32) * np.float32(1.0 / 8388608.0)) - np.float32(1.0)


def initial_genomes(pop, genome_len, seed, scale):
    ind = np.arange(pop, dtype=np.uint64)[:, None]
    k = np.arange(genome_len, dtype=np.uint64)[None, :]
    u = unit_sym(hash4(np.uint64(seed), np.uint64(STREAM_GENOME), ind, k))
    return (np.float32(scale) * u).astype(np.float32)


def initial_state(pop, nvars, seed, scale, generation=0, episode=0):
    """[pop, nvars] float32, the same row for every individual (common random numbers):
    start-state variable k of episode `episode` in GA generation `generation` =
    scale * unit_sym(hash5(seed, 2, generation, episode, k))."""
    k = np.arange(nvars, dtype=np.uint64)
    u = unit_sym(hash5(np.uint64(seed), np.uint64(STREAM_STATE), np.uint64(generation), np.uint64(episode), k))
    row = (np.float32(scale) * u).astype(np.float32)
    return np.broadcast_to(row, (pop, nvars)).copy()


def mean_over_episodes(returns):
    """Fitness over several start states, as wgfuse: summed in float32 in episode order from 0,
    divided by the number of episodes. `returns`: one array (or tensor) per episode."""
    total = returns[0]  # = 0 + returns[0]
    for r in returns[1:]:
        total = total + r
    return total / len(returns)


ELITES = 2  # the GA keeps the 2 best unchanged (src/sim/workloads.cpp)

# name -> sizes, genome length, init scale, GA settings (tournament, rate, sigma, lo, hi),
# the reference horizon (see docs/SIMULATIONS.md).
WORKLOADS = {
    "rastrigin": dict(pop=4096, steps=2000, genome=None, scale=5.12, ga=(3, 0.05, 0.3, -5.12, 5.12), horizon=None),
    "acrobot": dict(pop=4096, steps=500, genome=163, scale=1.0, ga=(3, 0.1, 0.1, -10.0, 10.0), horizon=60),
    "cartpole": dict(pop=4096, steps=500, genome=114, scale=1.0, ga=(3, 0.1, 0.1, -10.0, 10.0), horizon=None),
    "mountaincar": dict(pop=4096, steps=200, genome=99, scale=1.0, ga=(3, 0.1, 0.1, -10.0, 10.0), horizon=None),
    "market": dict(pop=10000, steps=1500, genome=502, scale=1.0, ga=(3, 0.1, 0.05, -10.0, 10.0), horizon=None),
    # The workload files of examples/sim/ (their headers; tol: the header's reference rtol and atol,
    # the agreement asked of a baseline's sample with wgfuse's).
    "pendulum": dict(pop=4096, steps=200, genome=41, scale=1.0, ga=(3, 0.1, 0.1, -10.0, 10.0), horizon=40,
                     tol=(1e-3, 1e-2)),
    "option_pricer": dict(pop=65536, steps=64, genome=1, scale=1.0, ga=(3, 0.1, 0.1, -10.0, 10.0), horizon=None,
                          tol=(2e-3, 0.25)),
}

# examples/sim/option_pricer.wgsl: a European call under geometric Brownian motion, one path per
# individual, its normals from the counter-based hash keyed by (seed, STREAM_PATH + episode,
# generation, individual, step).
OPTION = dict(s0=100.0, strike=105.0, rate=0.05, vol=0.2, maturity=1.0, stream=16)


def option_path_keys(pop, seed, generation, episode):
    """[pop] uint64: hash4(seed, STREAM_PATH + episode, generation, individual), the part of each
    step's key hash5(..., step) = pcg_hash(key + step) that is the same over a path."""
    ind = np.arange(pop, dtype=np.uint64)
    return hash4(np.uint64(seed), np.uint64(OPTION["stream"] + episode), np.uint64(generation), ind)


def pendulum_start(pop, seed, generation, episode):
    """[pop, 2] float32: examples/sim/pendulum.wgsl's start (theta ~ U(-pi, pi), its rate ~ U(-1, 1)),
    the same for every individual."""
    th = initial_state(pop, 1, seed, np.float32(math.pi), generation, episode)[:, 0]
    thdot = initial_state(pop, 2, seed, 1.0, generation, episode)[:, 1]
    return np.stack([th, thdot], 1).astype(np.float32)


def black_scholes_call():
    """The closed form (Black and Scholes 1973) of the price the option pricer's mean estimates."""
    o = OPTION
    vt = o["vol"] * math.sqrt(o["maturity"])
    d1 = (math.log(o["s0"] / o["strike"]) + (o["rate"] + 0.5 * o["vol"] ** 2) * o["maturity"]) / vt
    d2 = d1 - vt
    n = lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))  # noqa: E731
    return o["s0"] * n(d1) - o["strike"] * math.exp(-o["rate"] * o["maturity"]) * n(d2)


def black_scholes_check(payoffs):
    """Generation 0's Monte Carlo price (the mean discounted payoff over the paths) against the
    closed form: passes within 4 standard errors (RNG-independent)."""
    x = np.asarray(payoffs, dtype=np.float64)
    mean, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size))
    bs = black_scholes_call()
    return {"monte_carlo": mean, "standard_error": se, "black_scholes": bs, "paths": int(x.size),
            "pass": abs(mean - bs) <= 4 * se}


def genome_length(name, steps):
    g = WORKLOADS[name]["genome"]
    return steps if g is None else g


def horizon(name, steps):
    h = WORKLOADS[name]["horizon"]
    return steps if h is None else min(steps, h)


def load_market(path, steps):
    data = np.fromfile(path, dtype=np.float32)
    if data.size < steps * MARKET_RECORD:
        raise SystemExit(f"{path}: {data.size} floats, need {steps * MARKET_RECORD} (steps x 22); "
                         f"write it with: wgfuse sim market --steps {steps} --write-data {path}")
    return data[: steps * MARKET_RECORD].reshape(steps, MARKET_RECORD)


def sample_indices(pop, n=SAMPLES):
    n = min(n, pop)
    return [k * pop // n for k in range(n)]


def summarize(seconds):
    gps = [1.0 / s for s in seconds]
    return {"median": statistics.median(gps), "min": min(gps), "max": max(gps)}


def compare_with_wgfuse(sample_values, sample_at_horizon, wgfuse_json, tol=(1e-4, 1e-3)):
    """Agreement of this baseline's generation-0 sample with wgfuse's (same indices), each within
    max(atol, rtol |wgfuse's|) for tol = (rtol, atol)."""
    if not wgfuse_json or not os.path.exists(wgfuse_json):
        return None
    rtol, atol = tol
    with open(wgfuse_json) as f:
        w = json.load(f)["sample_fitness"]
    out = {"wgfuse_json": os.path.basename(wgfuse_json)}

    def agree(mine, theirs, key):
        n = len(theirs)
        if len(mine) != n:
            return {key: "size mismatch"}
        diffs = [abs(a - b) for a, b in zip(mine, theirs)]
        tol = [max(atol, rtol * abs(b)) for b in theirs]
        ok = sum(1 for d, t in zip(diffs, tol) if d <= t)
        return {"samples": n, "agree": ok, "max_abs_diff": max(diffs), "rtol": rtol, "atol": atol}

    out["vs_wgfuse"] = agree(sample_values, w["values"], "vs_wgfuse")
    out["vs_reference"] = agree(sample_values, w["reference"], "vs_reference")
    out["horizon"] = w["horizon"]
    if sample_at_horizon is not None:
        out["vs_wgfuse_at_horizon"] = agree(sample_at_horizon, w["values_at_horizon"], "x")
        out["vs_reference_at_horizon"] = agree(sample_at_horizon, w["reference_at_horizon"], "x")
    return out


def environment():
    return {"python": platform.python_version(), "machine": platform.machine(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=2)


def log(msg):
    print(msg, flush=True)


def failure_point(pop, steps, exc):
    """A sweep point that failed, reported as it is: the error and the end of its traceback."""
    msg = f"{type(exc).__name__}: {str(exc)[:2000]}"
    log(f"  FAILED: {msg}")
    return {"pop": pop, "steps": steps, "error": msg, "traceback_tail": traceback.format_exc()[-3000:]}


PI = math.pi
