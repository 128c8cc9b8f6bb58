#!/usr/bin/env python3
"""JAX baseline for `wgfuse sim`: jit + lax.scan over the time steps + vmap over
the population, with the GA step (tournament selection of size 3, uniform
crossover, Gaussian mutation, elitism 2, jax.random) jitted into the same
generation function, and one read-back of best and mean fitness per generation.
f32 matmuls at "highest" precision (no TF32), as wgfuse computes in f32.

Run: python3 sim_jax.py acrobot --json out.json [--compare wgfuse.json]
     python3 sim_jax.py pendulum --compare pendulum.json  (examples/sim/: pendulum, option_pricer)
     python3 sim_jax.py market --data market.f32 --sizes 512x1500,10000x1500
"""

import argparse
import functools
import sys
import time

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

import sim_common as C

jax.config.update("jax_default_matmul_precision", "highest")
PI = C.PI


def mlp_action(g, obs, nin, nh, nout):
    o1 = nh * nin
    o2 = o1 + nh
    o3 = o2 + nout * nh
    h = jnp.tanh(g[:o1].reshape(nh, nin) @ obs + g[o1:o2])
    logits = g[o2:o3].reshape(nout, nh) @ h + g[o3:o3 + nout]
    return jnp.argmax(logits)  # first maximum: ties -> lowest index


def wrap_pi(x):
    for _ in range(2):
        x = jnp.where(x > PI, x - 2 * PI, x)
        x = jnp.where(x < -PI, x + 2 * PI, x)
    return x


def acrobot_dsdt(y, a):
    m1 = m2 = l1 = 1.0
    lc1 = lc2 = 0.5
    I1 = I2 = 1.0
    g = 9.8
    th1, th2, dth1, dth2 = y[0], y[1], y[2], y[3]
    d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * jnp.cos(th2)) + I1 + I2
    d2 = m2 * (lc2**2 + l1 * lc2 * jnp.cos(th2)) + I2
    phi2 = m2 * lc2 * g * jnp.cos(th1 + th2 - PI / 2.0)
    phi1 = (-m2 * l1 * lc2 * dth2**2 * jnp.sin(th2) - 2 * m2 * l1 * lc2 * dth2 * dth1 * jnp.sin(th2)
            + (m1 * lc1 + m2 * l1) * g * jnp.cos(th1 - PI / 2) + phi2)
    dd2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dth1**2 * jnp.sin(th2) - phi2) / (m2 * lc2**2 + I2 - d2**2 / d1)
    dd1 = -(d2 * dd2 + phi1) / d1
    return jnp.stack([dth1, dth2, dd1, dd2])


# Each episode function evaluates ONE individual (vmapped over the population):
# (genome, initial state vars, shared data) -> fitness.

def acrobot_episode(g, s0, data, steps):
    def body(c, _):
        y, ret, done = c
        obs = jnp.stack([jnp.cos(y[0]), jnp.sin(y[0]), jnp.cos(y[1]), jnp.sin(y[1]), y[2], y[3]])
        a = mlp_action(g, obs, 6, 16, 3).astype(jnp.float32) - 1.0
        dt = 0.2
        k1 = acrobot_dsdt(y, a)
        k2 = acrobot_dsdt(y + dt / 2 * k1, a)
        k3 = acrobot_dsdt(y + dt / 2 * k2, a)
        k4 = acrobot_dsdt(y + dt * k3, a)
        n = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        th1, th2 = wrap_pi(n[0]), wrap_pi(n[1])
        ny = jnp.stack([th1, th2, jnp.clip(n[2], -4 * PI, 4 * PI), jnp.clip(n[3], -9 * PI, 9 * PI)])
        term = (-jnp.cos(th1) - jnp.cos(th2 + th1)) > 1.0
        ret = ret - jnp.where(done | term, 0.0, 1.0)
        return (jnp.where(done, y, ny), ret, done | term), None

    (_, ret, _), _ = lax.scan(body, (s0, jnp.float32(0), jnp.bool_(False)), None, length=steps)
    return ret


def cartpole_episode(g, s0, data, steps):
    def body(c, _):
        y, ret, done = c
        act = mlp_action(g, y, 4, 16, 2)
        force = act.astype(jnp.float32) * 20.0 - 10.0
        x, xd, th, thd = y[0], y[1], y[2], y[3]
        ct, st = jnp.cos(th), jnp.sin(th)
        temp = (force + 0.05 * thd * thd * st) / 1.1
        thacc = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xacc = temp - 0.05 * thacc * ct / 1.1
        n = jnp.stack([x + 0.02 * xd, xd + 0.02 * xacc, th + 0.02 * thd, thd + 0.02 * thacc])
        lim = 12 * 2 * PI / 360
        term = (n[0] < -2.4) | (n[0] > 2.4) | (n[2] < -lim) | (n[2] > lim)
        ret = ret + jnp.where(done, 0.0, 1.0)
        return (jnp.where(done, y, n), ret, done | term), None

    (_, ret, _), _ = lax.scan(body, (s0, jnp.float32(0), jnp.bool_(False)), None, length=steps)
    return ret


def mountaincar_episode(g, s0, data, steps):
    def body(c, _):
        p, v, ret, done = c
        act = mlp_action(g, jnp.stack([p, v / 0.07]), 2, 16, 3)
        nv = jnp.clip(v + ((act.astype(jnp.float32) - 1.0) * 0.001 + jnp.cos(3 * p) * (-0.0025)), -0.07, 0.07)
        np_ = jnp.clip(p + nv, -1.2, 0.6)
        nv = jnp.where((np_ == -1.2) & (nv < 0), 0.0, nv)
        term = (np_ >= 0.5) & (nv >= 0)
        ret = ret - jnp.where(done, 0.0, 1.0)
        return (jnp.where(done, p, np_), jnp.where(done, v, nv), ret, done | term), None

    pos0 = s0[0]
    (_, _, ret, _), _ = lax.scan(body, (pos0, jnp.float32(0), jnp.float32(0), jnp.bool_(False)), None, length=steps)
    return ret


def rastrigin_episode(g, s0, data, steps):
    # The terms are independent: the natural JAX form is one vectorised sum (the embarrassingly
    # parallel control case), not a scan.
    x = g[:steps]
    return -jnp.sum(x * x - 10.0 * jnp.cos(2 * PI * x) + 10.0)


def market_episode(g, s0, data, steps):
    feats, group = data  # [L, 6], [L, 4]
    Win, Wh, b = g[:128].reshape(16, 8), g[128:384].reshape(16, 16), g[384:400]
    Wout, bout = g[400:496].reshape(6, 16), g[496:502]

    def body(c, x):
        h, pos, fb, sr, sr2, eq, peak, mdd = c
        f, gr = x
        hn = jnp.tanh(Win @ jnp.concatenate([f, fb]) + b + 0.25 * (Wh @ h))
        out = Wout @ hn + bout
        p = jnp.tanh(out[:4])
        r = jnp.sum(p * 0.25 * gr) - 0.0005 * jnp.sum(jnp.abs(p - pos) * 0.25)
        eq = eq + r
        peak = jnp.maximum(peak, eq)
        return (hn, p, jnp.tanh(out[4:6]), sr + r, sr2 + r * r, eq, peak, jnp.maximum(mdd, peak - eq)), None

    z = jnp.float32(0)
    c0 = (jnp.zeros(16, jnp.float32), jnp.zeros(4, jnp.float32), jnp.zeros(2, jnp.float32), z, z, z, z, z)
    (_, _, _, sr, sr2, _, _, mdd), _ = lax.scan(body, c0, (feats[:steps], group[:steps]))
    mean = sr / steps
    var = jnp.maximum(sr2 / steps - mean * mean, 0.0)
    return mean / jnp.sqrt(var + 1e-12) * (8760.0 ** 0.5) - 5.0 * mdd


# examples/sim/pendulum.wgsl: Pendulum-v1, the file's own MLP 3-8-1, u = 2 tanh(out).
def pendulum_episode(g, s0, data, steps):
    w1, b1, w2, b2 = g[:24].reshape(8, 3), g[24:32], g[32:40], g[40]

    def body(c, _):
        th, thd, ret = c
        obs = jnp.stack([jnp.cos(th), jnp.sin(th), thd])
        u = jnp.clip(2.0 * jnp.tanh(w2 @ jnp.tanh(w1 @ obs + b1) + b2), -2.0, 2.0)
        an = jnp.mod(th + PI, 2 * PI) - PI
        cost = an * an + 0.1 * thd * thd + 0.001 * u * u
        nthd = jnp.clip(thd + (3.0 * 10.0 / 2.0 * jnp.sin(th) + 3.0 * u) * 0.05, -8.0, 8.0)
        return (th + nthd * 0.05, nthd, ret - cost), None

    (_, _, ret), _ = lax.scan(body, (s0[0], s0[1], jnp.float32(0)), None, length=steps)
    return ret


def pcg_hash_u32(v):
    """kernels/sim_rng.wgsl's pcg_hash on uint32 (wrapping)."""
    state = v * np.uint32(747796405) + np.uint32(2891336453)
    word = ((state >> ((state >> np.uint32(28)) + np.uint32(4))) ^ state) * np.uint32(277803737)
    return (word >> np.uint32(22)) ^ word


def unit_open_u32(h):
    return ((h >> np.uint32(8)).astype(jnp.float32) + 0.5) * (1.0 / 16777216.0)


# examples/sim/option_pricer.wgsl: one GBM path per individual; `key` = its hash4 prefix
# (sim_common.option_path_keys), each step's uniforms from pcg_hash(key + step) as wgfuse draws them.
def option_episode(g, key, data, steps):
    o = C.OPTION
    dt = o["maturity"] / steps
    drift, vol_sqrt_dt = (o["rate"] - 0.5 * o["vol"] ** 2) * dt, o["vol"] * dt ** 0.5

    def body(log_s, t):
        h = pcg_hash_u32(key + t)
        u1, u2 = unit_open_u32(h), unit_open_u32(pcg_hash_u32(h ^ np.uint32(0x9E3779B9)))
        z = jnp.sqrt(-2.0 * jnp.log(u1)) * jnp.cos(2 * PI * u2)
        return log_s + drift + vol_sqrt_dt * z, None

    log_s, _ = lax.scan(body, jnp.log(jnp.float32(o["s0"])), jnp.arange(steps, dtype=jnp.uint32))
    return jnp.exp(-o["rate"] * o["maturity"]) * jnp.maximum(jnp.exp(log_s) - o["strike"], 0.0)


EPISODES = {"acrobot": (acrobot_episode, 4, 0.1), "cartpole": (cartpole_episode, 4, 0.05),
            "mountaincar": (mountaincar_episode, 1, 0.1), "rastrigin": (rastrigin_episode, 1, 0.0),
            "market": (market_episode, 1, 0.0), "pendulum": (pendulum_episode, 2, None),
            "option_pricer": (option_episode, 1, None)}


def initial_states(name, pop, seed, generation, episodes):
    """[episodes, pop, nvars]: the start states of a generation's episodes (the same for every
    individual, as wgfuse; the option pricer: [episodes, pop], each path's key)."""
    if name == "pendulum":
        return jnp.asarray(np.stack([C.pendulum_start(pop, seed, generation, e) for e in range(episodes)]))
    if name == "option_pricer":
        return jnp.asarray(np.stack([C.option_path_keys(pop, seed, generation, e).astype(np.uint32)
                                     for e in range(episodes)]))
    _, nvars, scale = EPISODES[name]
    s = np.stack([C.initial_state(pop, nvars, seed, scale if scale else 1.0, generation, e) for e in range(episodes)])
    if name == "mountaincar":
        s = (np.float32(-0.5) + s).astype(np.float32)
    return jnp.asarray(s)


def ga_step(key, G, fit, cfg):
    tour, rate, sigma, lo, hi = cfg
    pop, glen = G.shape
    fitn = jnp.where(jnp.isfinite(fit), fit, -jnp.inf)
    best = jnp.argmax(fitn)
    finite = jnp.isfinite(fit)
    mean = jnp.sum(jnp.where(finite, fit, 0.0)) / jnp.maximum(jnp.sum(finite), 1)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    cand = jax.random.randint(k1, (pop, 2, tour), 0, pop)
    win = jnp.take_along_axis(cand, jnp.argmax(fitn[cand], axis=2)[..., None], axis=2)[..., 0]
    cross = jax.random.uniform(k2, (pop, glen)) < 0.5
    child = jnp.where(cross, G[win[:, 0]], G[win[:, 1]])
    mut = jax.random.uniform(k3, (pop, glen)) < rate
    child = jnp.where(mut, jnp.clip(child + sigma * jax.random.normal(k4, (pop, glen)), lo, hi), child)
    elite = lax.top_k(fitn, C.ELITES)[1]  # the E best, kept unchanged
    child = child.at[:C.ELITES].set(G[elite])
    return child, fitn[best], mean


def make_mean(name, steps):
    """(G, S0 [episodes, pop, ...], data) -> the mean return over the episodes, as wgfuse."""
    one = jax.vmap(functools.partial(EPISODES[name][0], steps=steps), in_axes=(0, 0, None))
    return lambda G, S0, data: C.mean_over_episodes([one(G, S0[e], data) for e in range(S0.shape[0])])


def make_eval(name, steps):
    return jax.jit(make_mean(name, steps))


def make_generation(name, steps, cfg):
    evaluate = make_mean(name, steps)

    @jax.jit
    def generation(key, G, S0, data):
        fit = evaluate(G, S0, data)
        return ga_step(key, G, fit, cfg)

    return generation


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(EPISODES))
    ap.add_argument("--sizes", default="", help="comma-separated POPxSTEPS points (default: the workload's)")
    ap.add_argument("--generations", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=1, help="fitness = mean return over N start states")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="")
    ap.add_argument("--compare", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    spec = C.WORKLOADS[a.workload]
    points = [tuple(int(v) for v in p.split("x")) for p in a.sizes.split(",") if p] or [(spec["pop"], spec["steps"])]
    max_steps = max(s for _, s in points)
    data = jnp.zeros(1, jnp.float32)
    if a.workload == "market":
        if not a.data:
            sys.exit("market needs --data FILE (wgfuse sim market --steps N --write-data FILE)")
        rec = C.load_market(a.data, max_steps)
        data = (jnp.asarray(rec[:, :6]), jnp.asarray(rec[:, 6:22].reshape(max_steps, 4, 4).sum(2) * np.float32(0.25)))
    dev = jax.devices()[0]
    if a.episodes < 1:
        sys.exit("--episodes must be at least 1")
    out = {"framework": "jax", "jax": jax.__version__, "mode": "jit+lax.scan+vmap", "workload": a.workload,
           "episodes": a.episodes,
           "device": str(getattr(dev, "device_kind", dev)), "environment": C.environment(), "points": []}
    for pop, steps in points:
        C.log(f"[jax] {a.workload} pop {pop} steps {steps}")
        try:
            glen = C.genome_length(a.workload, steps)
            G0 = jnp.asarray(C.initial_genomes(pop, glen, a.seed, spec["scale"]))
            # Each generation's start states, made before the clock starts.
            S = [initial_states(a.workload, pop, a.seed, g, a.episodes) for g in range(max(a.generations, 1))]
            S0 = S[0]
            gen = make_generation(a.workload, steps, spec["ga"])
            key = jax.random.PRNGKey(a.seed)
            t0 = time.perf_counter()
            G, b, m = gen(key, G0, S0, data)
            float(b)
            warm = time.perf_counter() - t0
            G = G0
            secs, best, mean = [], [], []
            for g in range(a.generations):
                key, sub = jax.random.split(key)
                t = time.perf_counter()
                G, b, m = gen(sub, G, S[g], data)
                b, m = float(b), float(m)  # the one read-back per generation
                secs.append(time.perf_counter() - t)
                best.append(b)
                mean.append(m)
            r = {"pop": pop, "steps": steps, "generations": a.generations, "gen_per_s": C.summarize(secs),
                 "seconds_per_generation": secs, "warmup_seconds": warm, "best_fitness": best, "mean_fitness": mean}
            if (pop, steps) == (spec["pop"], spec["steps"]) or len(points) == 1:
                idx = np.array(C.sample_indices(pop))
                f = np.asarray(make_eval(a.workload, steps)(G0, S0, data))
                vals = [float(v) for v in f[idx]]
                H = C.horizon(a.workload, steps)
                vh = vals if H == steps else [float(v) for v in np.asarray(make_eval(a.workload, H)(G0, S0, data))[idx]]
                r["sample_fitness"] = {"indices": idx.tolist(), "values": vals, "horizon": H, "values_at_horizon": vh}
                r["comparison"] = C.compare_with_wgfuse(vals, vh, a.compare, spec.get("tol", (1e-4, 1e-3)))
                if a.workload == "option_pricer":
                    r["black_scholes"] = C.black_scholes_check(f)
                    C.log(f"  Monte Carlo price {r['black_scholes']['monte_carlo']:.4f} +- "
                          f"{r['black_scholes']['standard_error']:.4f}, Black-Scholes "
                          f"{r['black_scholes']['black_scholes']:.4f}: {'ok' if r['black_scholes']['pass'] else 'FAIL'}")
            C.log(f"  {r['gen_per_s']['median']:.4g} gen/s (compile + first generation {warm:.1f} s)")
            out["points"].append(r)
        except Exception as e:
            out["points"].append(C.failure_point(pop, steps, e))
        C.write_json(a.json, out)
    C.write_json(a.json, out)


if __name__ == "__main__":
    main()
