#!/usr/bin/env python3
"""PyTorch baselines for `wgfuse sim`: the same workloads, sizes, dynamics and GA.

Modes (--mode):
  eager            one Python call per time step, each launching the step's ops
                   (what an eager framework does; no synchronisation inside the
                   episode, one read-back of best/mean per generation);
  compile-step     torch.compile of the step function, called once per step;
  compile-episode  torch.compile of the whole episode (the Python loop unrolled
                   into one graph): the seed reported RecursionError and OOM
                   beyond 500 steps; failures are reported as they are.

A generation = evaluate every individual for L steps + the GA step (tournament
selection of size 3, uniform crossover, Gaussian mutation, elitism 2, the same
as kernels/sim_evolve.wgsl but with torch's RNG) + one read-back of best and
mean fitness. Initial genomes and states come from the same counter-based hash
as wgfuse, so generation-0 fitness can be compared individual by individual
(--compare WGFUSE_JSON).

Run: python3 sim_torch.py acrobot --mode eager --json out.json
     python3 sim_torch.py option_pricer --compare option_pricer.json  (examples/sim/: pendulum, option_pricer)
     python3 sim_torch.py market --data market.f32 --sizes 512x1500,10000x1500
"""

import argparse
import sys
import time

import numpy as np
import torch

import sim_common as C

PI = C.PI


# ---- policies ----

def mlp_weights(G, nin, nh, nout):
    B = G.shape[0]
    o1 = nh * nin
    o2 = o1 + nh
    o3 = o2 + nout * nh
    return (G[:, :o1].reshape(B, nh, nin), G[:, o1:o2], G[:, o2:o3].reshape(B, nout, nh), G[:, o3:o3 + nout])


def mlp_action(w, obs):
    W1, b1, W2, b2 = w
    h = torch.tanh(torch.bmm(W1, obs.unsqueeze(2)).squeeze(2) + b1)
    logits = torch.bmm(W2, h.unsqueeze(2)).squeeze(2) + b2
    return torch.argmax(logits, dim=1)  # first maximum: ties -> lowest index


def wrap_pi(x):
    # Gymnasium's wrap() loops; two passes cover any step an RK4 update can make here.
    for _ in range(2):
        x = torch.where(x > PI, x - 2 * PI, x)
        x = torch.where(x < -PI, x + 2 * PI, x)
    return x


# ---- workloads: init(pop, seed, dev, generation, episode) -> state, step(state, w, x_t) -> state, fitness(state, steps) ----

class Rastrigin:
    name = "rastrigin"

    @staticmethod
    def weights(G):
        return (G,)

    @staticmethod
    def inputs(G, data, steps):
        # The terms are independent: the natural PyTorch form is one vectorised sum over all
        # dimensions (the embarrassingly parallel control case), not a loop over them.
        return [G[:, :steps]]

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        return (torch.zeros(pop, device=dev),)


    @staticmethod
    def step(s, w, x):
        (acc,) = s
        return (acc + (x * x - 10.0 * torch.cos(2 * PI * x) + 10.0).sum(1),)

    @staticmethod
    def fitness(s, steps):
        return -s[0]


class Acrobot:
    name = "acrobot"

    @staticmethod
    def weights(G):
        return mlp_weights(G, 6, 16, 3)

    @staticmethod
    def inputs(G, data, steps):
        return [None] * steps

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        y = torch.from_numpy(C.initial_state(pop, 4, seed, 0.1, generation, episode)).to(dev)
        return (y, torch.zeros(pop, device=dev), torch.zeros(pop, dtype=torch.bool, device=dev))

    @staticmethod
    def dsdt(y, a):
        m1 = m2 = l1 = 1.0
        lc1 = lc2 = 0.5
        I1 = I2 = 1.0
        g = 9.8
        th1, th2, dth1, dth2 = y.unbind(1)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * torch.cos(th2)) + I1 + I2
        d2 = m2 * (lc2**2 + l1 * lc2 * torch.cos(th2)) + I2
        phi2 = m2 * lc2 * g * torch.cos(th1 + th2 - PI / 2.0)
        phi1 = (-m2 * l1 * lc2 * dth2**2 * torch.sin(th2) - 2 * m2 * l1 * lc2 * dth2 * dth1 * torch.sin(th2)
                + (m1 * lc1 + m2 * l1) * g * torch.cos(th1 - PI / 2) + phi2)
        dd2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dth1**2 * torch.sin(th2) - phi2) / (m2 * lc2**2 + I2 - d2**2 / d1)
        dd1 = -(d2 * dd2 + phi1) / d1
        return torch.stack([dth1, dth2, dd1, dd2], 1)

    @staticmethod
    def step(s, w, x):
        y, ret, done = s
        obs = torch.stack([torch.cos(y[:, 0]), torch.sin(y[:, 0]), torch.cos(y[:, 1]), torch.sin(y[:, 1]),
                           y[:, 2], y[:, 3]], 1)
        a = mlp_action(w, obs).to(y.dtype) - 1.0
        dt = 0.2
        k1 = Acrobot.dsdt(y, a)
        k2 = Acrobot.dsdt(y + dt / 2 * k1, a)
        k3 = Acrobot.dsdt(y + dt / 2 * k2, a)
        k4 = Acrobot.dsdt(y + dt * k3, a)
        n = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        th1 = wrap_pi(n[:, 0])
        th2 = wrap_pi(n[:, 1])
        ny = torch.stack([th1, th2, n[:, 2].clamp(-4 * PI, 4 * PI), n[:, 3].clamp(-9 * PI, 9 * PI)], 1)
        term = (-torch.cos(th1) - torch.cos(th2 + th1)) > 1.0
        live = ~done
        ret = ret - (live & ~term).to(ret.dtype)
        ny = torch.where(done.unsqueeze(1), y, ny)
        return (ny, ret, done | term)

    @staticmethod
    def fitness(s, steps):
        return s[1]


class CartPole:
    name = "cartpole"

    @staticmethod
    def weights(G):
        return mlp_weights(G, 4, 16, 2)

    @staticmethod
    def inputs(G, data, steps):
        return [None] * steps

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        y = torch.from_numpy(C.initial_state(pop, 4, seed, 0.05, generation, episode)).to(dev)
        return (y, torch.zeros(pop, device=dev), torch.zeros(pop, dtype=torch.bool, device=dev))

    @staticmethod
    def step(s, w, x):
        y, ret, done = s
        act = mlp_action(w, y)
        force = act.to(y.dtype) * 20.0 - 10.0  # +10 for action 1, -10 for action 0
        px, xd, th, thd = y.unbind(1)
        ct, st = torch.cos(th), torch.sin(th)
        temp = (force + 0.05 * thd * thd * st) / 1.1
        thacc = (9.8 * st - ct * temp) / (0.5 * (4.0 / 3.0 - 0.1 * ct * ct / 1.1))
        xacc = temp - 0.05 * thacc * ct / 1.1
        nx, nxd, nth, nthd = px + 0.02 * xd, xd + 0.02 * xacc, th + 0.02 * thd, thd + 0.02 * thacc
        lim = 12 * 2 * PI / 360
        term = (nx < -2.4) | (nx > 2.4) | (nth < -lim) | (nth > lim)
        ny = torch.where(done.unsqueeze(1), y, torch.stack([nx, nxd, nth, nthd], 1))
        ret = ret + (~done).to(ret.dtype)
        return (ny, ret, done | term)

    @staticmethod
    def fitness(s, steps):
        return s[1]


class MountainCar:
    name = "mountaincar"

    @staticmethod
    def weights(G):
        return mlp_weights(G, 2, 16, 3)

    @staticmethod
    def inputs(G, data, steps):
        return [None] * steps

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        u = torch.from_numpy(C.initial_state(pop, 1, seed, 0.1, generation, episode)[:, 0]).to(dev)
        pos = (-0.5 + u).to(torch.float32)
        return (pos, torch.zeros_like(pos), torch.zeros_like(pos), torch.zeros(pop, dtype=torch.bool, device=dev))

    @staticmethod
    def step(s, w, x):
        p, v, ret, done = s
        act = mlp_action(w, torch.stack([p, v / 0.07], 1))
        nv = v + ((act.to(v.dtype) - 1.0) * 0.001 + torch.cos(3 * p) * (-0.0025))
        nv = nv.clamp(-0.07, 0.07)
        np_ = (p + nv).clamp(-1.2, 0.6)
        nv = torch.where((np_ == -1.2) & (nv < 0), torch.zeros_like(nv), nv)
        term = (np_ >= 0.5) & (nv >= 0)
        ret = ret - (~done).to(ret.dtype)
        return (torch.where(done, p, np_), torch.where(done, v, nv), ret, done | term)

    @staticmethod
    def fitness(s, steps):
        return s[2]


class Market:
    name = "market"

    @staticmethod
    def weights(G):
        B = G.shape[0]
        return (G[:, :128].reshape(B, 16, 8), G[:, 128:384].reshape(B, 16, 16), G[:, 384:400],
                G[:, 400:496].reshape(B, 6, 16), G[:, 496:502])

    @staticmethod
    def inputs(G, data, steps):
        feats = data[:steps, :6]
        group = (data[:steps, 6:22].reshape(steps, 4, 4).sum(2)) * 0.25
        # Contiguous per-step tensors: the same shapes and strides at every step (no recompiles).
        return [(feats[t].clone(), group[t].clone()) for t in range(steps)]

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        z = lambda *shape: torch.zeros(*shape, device=dev)  # noqa: E731
        return (z(pop, 16), z(pop, 4), z(pop, 2), z(pop), z(pop), z(pop), z(pop), z(pop))

    @staticmethod
    def step(s, w, x):
        h, pos, fb, sr, sr2, eq, peak, mdd = s
        Win, Wh, b, Wout, bout = w
        feats, group = x
        inp = torch.cat([feats.unsqueeze(0).expand(h.shape[0], 6), fb], 1)
        pre = torch.bmm(Win, inp.unsqueeze(2)).squeeze(2) + b + 0.25 * torch.bmm(Wh, h.unsqueeze(2)).squeeze(2)
        hn = torch.tanh(pre)
        out = torch.bmm(Wout, hn.unsqueeze(2)).squeeze(2) + bout
        p = torch.tanh(out[:, :4])
        r = (p * 0.25 * group).sum(1) - 0.0005 * ((p - pos).abs() * 0.25).sum(1)
        eq = eq + r
        peak = torch.maximum(peak, eq)
        return (hn, p, torch.tanh(out[:, 4:6]), sr + r, sr2 + r * r, eq, peak, torch.maximum(mdd, peak - eq))

    @staticmethod
    def fitness(s, steps):
        sr, sr2, mdd = s[3], s[4], s[7]
        mean = sr / steps
        var = torch.clamp(sr2 / steps - mean * mean, min=0.0)
        return mean / torch.sqrt(var + 1e-12) * (8760.0 ** 0.5) - 5.0 * mdd


class Pendulum:
    """examples/sim/pendulum.wgsl: Pendulum-v1, the file's own MLP 3-8-1, u = 2 tanh(out)."""
    name = "pendulum"

    @staticmethod
    def weights(G):
        B = G.shape[0]
        return (G[:, :24].reshape(B, 8, 3), G[:, 24:32], G[:, 32:40], G[:, 40])

    @staticmethod
    def inputs(G, data, steps):
        return [None] * steps

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        s = torch.from_numpy(C.pendulum_start(pop, seed, generation, episode)).to(dev)
        return (s[:, 0].contiguous(), s[:, 1].contiguous(), torch.zeros(pop, device=dev))

    @staticmethod
    def step(s, w, x):
        th, thd, ret = s
        W1, b1, w2, b2 = w
        obs = torch.stack([torch.cos(th), torch.sin(th), thd], 1)
        h = torch.tanh(torch.bmm(W1, obs.unsqueeze(2)).squeeze(2) + b1)
        u = (2.0 * torch.tanh((w2 * h).sum(1) + b2)).clamp(-2.0, 2.0)
        an = torch.remainder(th + PI, 2 * PI) - PI
        cost = an * an + 0.1 * thd * thd + 0.001 * u * u
        nthd = (thd + (3.0 * 10.0 / 2.0 * torch.sin(th) + 3.0 * u) * 0.05).clamp(-8.0, 8.0)
        return (th + nthd * 0.05, nthd, ret - cost)

    @staticmethod
    def fitness(s, steps):
        return s[2]


M32 = 0xFFFFFFFF


def pcg_hash(v):
    """kernels/sim_rng.wgsl's pcg_hash on uint32 values held in int64 tensors (no product overflows)."""
    state = (v * 747796405 + 2891336453) & M32
    word = (((state >> ((state >> 28) + 4)) ^ state) * 277803737) & M32
    return ((word >> 22) ^ word) & M32


class OptionPricer:
    """examples/sim/option_pricer.wgsl: one GBM path per individual, each step's uniforms from
    pcg_hash(key + step) as wgfuse draws them (key: sim_common.option_path_keys)."""
    name = "option_pricer"

    @staticmethod
    def weights(G):
        return ()

    @staticmethod
    def inputs(G, data, steps):
        return [(t, C.OPTION["maturity"] / steps) for t in range(steps)]

    @staticmethod
    def init(pop, seed, dev, generation=0, episode=0):
        key = torch.from_numpy(C.option_path_keys(pop, seed, generation, episode).astype(np.int64)).to(dev)
        return (torch.full((pop,), float(np.log(np.float32(C.OPTION["s0"]))), device=dev), key)

    @staticmethod
    def step(s, w, x):
        log_s, key = s
        t, dt = x
        o = C.OPTION
        h = pcg_hash(key + t)
        u1 = ((h >> 8).to(torch.float32) + 0.5) * (1.0 / 16777216.0)
        u2 = ((pcg_hash(h ^ 0x9E3779B9) >> 8).to(torch.float32) + 0.5) * (1.0 / 16777216.0)
        z = torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2 * PI * u2)
        return (log_s + (o["rate"] - 0.5 * o["vol"] ** 2) * dt + o["vol"] * dt ** 0.5 * z, key)

    @staticmethod
    def fitness(s, steps):
        o = C.OPTION
        return float(np.exp(-o["rate"] * o["maturity"])) * (torch.exp(s[0]) - o["strike"]).clamp(min=0.0)


WORKLOADS = {c.name: c for c in (Rastrigin, Acrobot, CartPole, MountainCar, Market, Pendulum, OptionPricer)}


def episode(W, G, s0, data, steps, step_fn):
    """Fitness of every individual after `steps` steps from the initial state s0."""
    s = s0
    w = W.weights(G)
    for x in W.inputs(G, data, steps):
        s = step_fn(s, w, x)
    return W.fitness(s, steps)


def ga_step(G, fit, cfg):
    tour, rate, sigma, lo, hi = cfg
    pop, glen = G.shape
    fitn = torch.where(torch.isfinite(fit), fit, torch.full_like(fit, -float("inf")))
    best = torch.argmax(fitn)
    finite = torch.isfinite(fit)
    mean = torch.where(finite, fit, torch.zeros_like(fit)).sum() / finite.sum().clamp(min=1)
    cand = torch.randint(0, pop, (pop, 2, tour), device=G.device)
    win = torch.gather(cand, 2, torch.argmax(fitn[cand], 2, keepdim=True)).squeeze(2)
    cross = torch.rand(pop, glen, device=G.device) < 0.5
    child = torch.where(cross, G[win[:, 0]], G[win[:, 1]])
    mut = torch.rand(pop, glen, device=G.device) < rate
    child = torch.where(mut, (child + sigma * torch.randn(pop, glen, device=G.device)).clamp(lo, hi), child)
    elite = torch.topk(fitn, C.ELITES).indices  # the E best, kept unchanged
    child[:C.ELITES] = G[elite]
    return child, fitn[best], mean


def evaluate(G, starts, steps, episode_fn):
    """Fitness: the mean return over the start states `starts` (one per episode), as wgfuse."""
    return C.mean_over_episodes([episode_fn(G, s0, steps) for s0 in starts])


def run_point(W, pop, steps, gens, seed, dev, episode_fn, episodes):
    glen = C.genome_length(W.name, steps)
    cfg = C.WORKLOADS[W.name]["ga"]
    G0 = torch.from_numpy(C.initial_genomes(pop, glen, seed, C.WORKLOADS[W.name]["scale"])).to(dev)
    # The start states of each generation's episodes (hash-seeded, the same for every individual,
    # as wgfuse), made before the clock starts.
    starts = [[W.init(pop, seed, dev, g, e) for e in range(episodes)] for g in range(max(gens, 1))]
    torch.manual_seed(seed)

    def generation(G, g):
        fit = evaluate(G, starts[g], steps, episode_fn)
        child, best, mean = ga_step(G, fit, cfg)
        return child, best.item(), mean.item(), fit  # .item(): the one read-back per generation

    t0 = time.perf_counter()
    generation(G0, 0)  # warm-up (and compilation), discarded
    warm = time.perf_counter() - t0
    G = G0
    secs, best, mean = [], [], []
    for g in range(gens):
        t = time.perf_counter()
        G, b, m, _ = generation(G, g)
        secs.append(time.perf_counter() - t)
        best.append(b)
        mean.append(m)
    return {"pop": pop, "steps": steps, "generations": gens, "gen_per_s": C.summarize(secs),
            "seconds_per_generation": secs, "warmup_seconds": warm, "best_fitness": best, "mean_fitness": mean,
            "G0": G0, "starts": starts[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--mode", default="eager", choices=["eager", "compile-step", "compile-episode"])
    ap.add_argument("--sizes", default="", help="comma-separated POPxSTEPS points (default: the workload's)")
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=1, help="fitness = mean return over N start states")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", default="", help="market records (wgfuse sim market --write-data)")
    ap.add_argument("--compare", default="", help="wgfuse sim --json output to compare generation-0 fitness with")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    W = WORKLOADS[a.workload]
    dev = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 arithmetic, as wgfuse
    spec = C.WORKLOADS[a.workload]
    points = [tuple(int(v) for v in p.split("x")) for p in a.sizes.split(",") if p] or [(spec["pop"], spec["steps"])]
    max_steps = max(s for _, s in points)
    data = None
    if a.workload == "market":
        if not a.data:
            sys.exit("market needs --data FILE (wgfuse sim market --steps N --write-data FILE)")
        data = torch.from_numpy(C.load_market(a.data, max_steps)).to(dev)

    if a.episodes < 1:
        sys.exit("--episodes must be at least 1")
    out = {"framework": "pytorch", "torch": torch.__version__, "mode": a.mode, "workload": a.workload,
           "episodes": a.episodes,
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "environment": C.environment(), "points": []}
    compiled_step = None
    for pop, steps in points:
        C.log(f"[torch {a.mode}] {a.workload} pop {pop} steps {steps}")
        try:
            if a.mode == "eager":
                episode_fn = lambda G, s0, L: episode(W, G, s0, data, L, W.step)  # noqa: E731
            elif a.mode == "compile-step":
                if compiled_step is None:
                    compiled_step = torch.compile(W.step)
                episode_fn = lambda G, s0, L: episode(W, G, s0, data, L, compiled_step)  # noqa: E731
            else:
                compiled_episode = torch.compile(lambda G, s0: episode(W, G, s0, data, steps, W.step))
                episode_fn = lambda G, s0, L: (compiled_episode(G, s0) if L == steps  # noqa: E731
                                               else episode(W, G, s0, data, L, W.step))
            # Written before the point runs, so that a point killed by a time limit shows as such.
            out["points"].append({"pop": pop, "steps": steps,
                                  "error": "did not finish (killed by the time limit or crashed)"})
            C.write_json(a.json, out)
            r = run_point(W, pop, steps, a.generations, a.seed, dev, episode_fn, a.episodes)
            out["points"].pop()
            G0, starts = r.pop("G0"), r.pop("starts")
            if (pop, steps) == (spec["pop"], spec["steps"]) or len(points) == 1:
                idx = C.sample_indices(pop)
                f = evaluate(G0, starts, steps, episode_fn)
                vals = [float(v) for v in f[idx].cpu()]
                H = C.horizon(a.workload, steps)
                eager = lambda G, s0, L: episode(W, G, s0, data, L, W.step)  # noqa: E731
                vh = vals if H == steps else [float(v) for v in evaluate(G0, starts, H, eager)[idx].cpu()]
                r["sample_fitness"] = {"indices": idx, "values": vals, "horizon": H, "values_at_horizon": vh}
                r["comparison"] = C.compare_with_wgfuse(vals, vh, a.compare, spec.get("tol", (1e-4, 1e-3)))
                if a.workload == "option_pricer":
                    r["black_scholes"] = C.black_scholes_check(f.cpu().numpy())
                    C.log(f"  Monte Carlo price {r['black_scholes']['monte_carlo']:.4f} +- "
                          f"{r['black_scholes']['standard_error']:.4f}, Black-Scholes "
                          f"{r['black_scholes']['black_scholes']:.4f}: {'ok' if r['black_scholes']['pass'] else 'FAIL'}")
            C.log(f"  {r['gen_per_s']['median']:.4g} gen/s (warm-up {r['warmup_seconds']:.1f} s)")
            out["points"].append(r)
        except Exception as e:  # report failures as they are (torch.compile on long episodes)
            if out["points"] and "did not finish" in str(out["points"][-1].get("error", "")):
                out["points"].pop()
            out["points"].append(C.failure_point(pop, steps, e))
        C.write_json(a.json, out)
    C.write_json(a.json, out)


if __name__ == "__main__":
    main()
