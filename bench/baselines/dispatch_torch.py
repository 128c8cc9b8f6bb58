#!/usr/bin/env python3
"""PyTorch-on-CUDA baseline for wgfuse's dispatch-overhead benchmark.

Measures, with the sequential-dispatch method (N ops, one synchronize, wall
clock; per-op cost = OLS slope of median time against N):
  * x.mul_(a) on 4096 and on 16,777,216 floats, sequential and naive
    (synchronize after every op);
  * a k-op chain (k = 1..16) on both sizes: eager k mul_ calls, eager with a
    synchronize after each op, and torch.compile of the chain (mode "default"
    and "reduce-overhead", the latter replaying CUDA graphs).

Run: python3 dispatch_torch.py [--quick] [--reps R] [--json FILE]
"""

import argparse
import json
import statistics
import sys
import time

import torch

SMALL_N = 4096
LARGE_N = 1 << 24  # 16,777,216 floats = 64 MiB
MAX_CHAIN = 16
# The sweeps multiply one buffer hundreds of thousands of times: 1 + 2^-20 is
# exact in float32 and grows the data by at most e^(5e5 * 2^-20) ~ e^0.5.
SWEEP_FACTOR = 1.0 + 2.0**-20
CHAIN_FACTORS = tuple(1.0 + 1e-4 * (j + 1) for j in range(MAX_CHAIN))
RTOL = 1e-6
COMPILE_MODES = ("default", "reduce-overhead")


def sync():
    torch.cuda.synchronize()


def log(msg):
    print(msg, flush=True)


def summarize(samples_us):
    return {
        "median_us": statistics.median(samples_us),
        "min_us": min(samples_us),
        "max_us": max(samples_us),
    }


def fit_line(points):
    """Ordinary least squares of median_us against n."""
    xs = [p["n"] for p in points]
    ys = [p["median_us"] for p in points]
    mx = sum(xs) / len(xs)
    my = sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    slope = sxy / sxx
    intercept = my - slope * mx
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    return {
        "slope_us": slope,
        "intercept_us": intercept,
        "r2": 1.0 - ss_res / syy if syy > 0 else 1.0,
    }


def dispatch_counts(max_n):
    ns, n = [], 1
    while n <= max_n:
        ns.append(n)
        n *= 2
    return ns


def sweep(ns, reps, warmup_reps, body):
    """Times body(n), which must end with a synchronize, for every n.

    The rep loop is outside the n loop so that clock drift spreads over all
    points instead of biasing the slope; warm-up passes are discarded.
    """
    samples = {n: [] for n in ns}
    for rep in range(warmup_reps + reps):
        for n in ns:
            t0 = time.perf_counter()
            body(n)
            us = (time.perf_counter() - t0) * 1e6
            if rep >= warmup_reps:
                samples[n].append(us)
    points = [{"n": n, **summarize(samples[n])} for n in ns]
    return {**fit_line(points), "points": points}


def time_chain(runs, reps, warmup_reps, prepare, run_once):
    """Median over reps of (wall time of `runs` chain runs + one sync) / runs."""
    samples = []
    for rep in range(warmup_reps + reps):
        prepare()
        sync()
        t0 = time.perf_counter()
        for _ in range(runs):
            run_once()
        sync()
        us = (time.perf_counter() - t0) * 1e6 / runs
        if rep >= warmup_reps:
            samples.append(us)
    return summarize(samples)


def random_data(n, seed):
    """Uniform in [0.5, 1.5): never zero, so relative differences are defined."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return torch.rand(n, device="cuda", generator=gen) + 0.5


def max_rel_diff(out, ref):
    return ((out - ref).abs() / ref.abs()).max().item()


# ------------------------------------------------------------- elementwise


def measure_elementwise(n, max_dispatches, reps, warmup_reps):
    x = random_data(n, seed=1)

    def sequential(count):
        for _ in range(count):
            x.mul_(SWEEP_FACTOR)
        sync()

    def naive(count):
        for _ in range(count):
            x.mul_(SWEEP_FACTOR)
            sync()

    ns = dispatch_counts(max_dispatches)
    return {
        "n_elements": n,
        "bytes_per_op": 8 * n,  # one float read and one written per element
        "sequential": sweep(ns, reps, warmup_reps, sequential),
        "naive": sweep(ns, reps, warmup_reps, naive),
    }


# ------------------------------------------------------------- chain


def eager_chain(x, k):
    for a in CHAIN_FACTORS[:k]:
        x.mul_(a)


def eager_chain_sync(x, k):
    for a in CHAIN_FACTORS[:k]:
        x.mul_(a)
        sync()


def make_chain_fn(k):
    """The chain as a pure function for torch.compile.

    Out of place: in reduce-overhead mode a compiled function that mutates its
    input skips CUDA graphs. Inductor fuses it into one kernel that reads x and
    writes the result: the same 8 bytes per element as one in-place pass.
    """
    factors = CHAIN_FACTORS[:k]

    def chain(x):
        y = x * factors[0]
        for a in factors[1:]:
            y = y * a
        return y

    return chain


def error_text(exc):
    return f"{type(exc).__name__}: {exc}"[:4000]


def measure_compiled(mode, x0, ks, runs, reps, warmup_reps):
    """Returns ({k: result or None}, error string or None) for one mode.

    Each k is a new function, compiled after torch.compiler.reset() so that
    recompilation limits never send a k back to eager. After the first failure
    the remaining ks are skipped and the error is recorded.
    """
    results = {k: None for k in ks}
    for k in ks:
        try:
            torch.compiler.reset()
            fn = torch.compile(make_chain_fn(k), mode=mode, fullgraph=True, dynamic=False)

            if mode == "reduce-overhead":
                def call():
                    # Tells CUDA-graph trees a new iteration starts, so replay
                    # may reuse the previous (discarded) output's memory.
                    torch.compiler.cudagraph_mark_step_begin()
                    return fn(x0)
            else:
                def call():
                    return fn(x0)

            t0 = time.perf_counter()
            call()
            sync()
            compile_s = time.perf_counter() - t0

            stats = time_chain(runs, reps, warmup_reps, lambda: None, call)

            # Checked after timing so that reduce-overhead is checked on graph
            # replay, not on its first (eager-like) warm-up call.
            out = call().clone()
            ref = x0.clone()
            eager_chain(ref, k)
            diff = max_rel_diff(out, ref)
        except Exception as exc:  # noqa: BLE001 - any compile failure is a result
            return results, error_text(exc)
        results[k] = {**stats, "compile_s": compile_s, "max_rel_diff": diff}
    return results, None


def measure_chain(name, n, ks, runs, reps, warmup_reps):
    x0 = random_data(n, seed=2)
    x = x0.clone()

    def restore():
        x.copy_(x0)

    rows = []
    for k in ks:
        log(f"[torch] chain {name} ({n} floats): eager k={k}")
        rows.append({
            "k": k,
            "eager": time_chain(runs, reps, warmup_reps, restore, lambda: eager_chain(x, k)),
            "eager_sync": time_chain(runs, reps, warmup_reps, restore,
                                     lambda: eager_chain_sync(x, k)),
        })

    compile_errors = {}
    for mode in COMPILE_MODES:
        log(f"[torch] chain {name} ({n} floats): torch.compile mode={mode}, k={ks}")
        per_k, error = measure_compiled(mode, x0, ks, runs, reps, warmup_reps)
        compile_errors[mode] = error
        if error:
            log(f"[torch]   torch.compile mode={mode} failed: {error.splitlines()[0]}")
        for row in rows:
            row[f"compiled_{mode.replace('-', '_')}"] = per_k[row["k"]]

    diffs = [row[key]["max_rel_diff"] for row in rows for key in row
             if key.startswith("compiled_") and row[key] is not None]
    worst = max(diffs) if diffs else None
    return {
        "n_elements": n,
        "bytes": 4 * n,
        "runs_per_sample": runs,
        "compile_errors": compile_errors,
        "check": {
            "compared": "compiled vs eager, max |compiled - eager| / |eager|",
            "rtol": RTOL,
            "max_rel_diff": worst,
            "pass": None if worst is None else worst <= RTOL,
        },
        "rows": rows,
    }


# ------------------------------------------------------------- output


def print_sweep_table(name, result):
    log(f"\n== x.mul_(a), {name}: {result['n_elements']} floats ==")
    log(f"{'variant':<12} {'slope_us':>10} {'intercept_us':>13} {'r2':>8}")
    for variant in ("sequential", "naive"):
        s = result[variant]
        log(f"{variant:<12} {s['slope_us']:>10.3f} {s['intercept_us']:>13.3f} {s['r2']:>8.5f}")
    log(f"{'N':>6} {'sequential':>12} {'naive':>12}   (median us per N ops + sync)")
    for p, q in zip(result["sequential"]["points"], result["naive"]["points"]):
        log(f"{p['n']:>6} {p['median_us']:>12.1f} {q['median_us']:>12.1f}")


def print_chain_table(name, result):
    log(f"\n== chain, {name}: {result['n_elements']} floats "
        f"({result['runs_per_sample']} chain runs per sample; us per chain run) ==")
    cols = ("eager", "eager_sync", "compiled_default", "compiled_reduce_overhead")
    headers = ("eager", "eager_sync", "compiled", "compiled_ro")
    log(f"{'k':>3} " + " ".join(f"{h:>12}" for h in headers) + "   (ro = reduce-overhead)")
    for row in result["rows"]:
        cells = []
        for c in cols:
            cells.append(f"{row[c]['median_us']:>12.2f}" if row[c] is not None else f"{'-':>12}")
        log(f"{row['k']:>3} " + " ".join(cells))
    check = result["check"]
    verdict = {True: "PASS", False: "FAIL", None: "not run"}[check["pass"]]
    log(f"check: compiled vs eager max relative difference {check['max_rel_diff']} "
        f"(rtol {RTOL:g}): {verdict}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer points, reps and ks")
    parser.add_argument("--reps", type=int, help="timed repetitions per point (default 20, quick 10)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON to FILE")
    args = parser.parse_args()
    if args.reps is None:
        args.reps = 10 if args.quick else 20
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    return args


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("dispatch_torch.py: CUDA is not available to torch")

    quick = args.quick
    reps = args.reps
    warmup_reps = 1 if quick else 2
    max_dispatches = 1024 if quick else 4096
    max_large_dispatches = 64 if quick else 256
    ks = [1, 2, 4, 8, 16] if quick else list(range(1, MAX_CHAIN + 1))
    # Many chain runs per sample amortize the one final synchronize.
    small_chain_runs = 20 if quick else 50
    large_chain_runs = 2 if quick else 5

    device = torch.cuda.get_device_name()
    log(f"device: {device}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    log(f"method: median of {reps} reps (+{warmup_reps} warm-up) per point; "
        "slope = OLS fit of median vs N")
    started = time.perf_counter()

    # Warm-up: about half a second of large ops lifts the clocks from idle and
    # initializes the CUDA context and the kernels before anything is timed.
    warm = random_data(LARGE_N, seed=0)
    for _ in range(10000):
        warm.mul_(SWEEP_FACTOR)
    sync()
    del warm

    elementwise = {}
    for name, n, max_n in (("small", SMALL_N, max_dispatches),
                           ("large", LARGE_N, max_large_dispatches)):
        log(f"[torch] x.mul_(a) sweep, {name} ({n} floats), N up to {max_n}")
        elementwise[name] = measure_elementwise(n, max_n, reps, warmup_reps)
        print_sweep_table(name, elementwise[name])
    large_gbs = elementwise["large"]["bytes_per_op"] / elementwise["large"]["sequential"]["slope_us"] * 1e-3
    log(f"large x.mul_(a): {large_gbs:.1f} GB/s (8 bytes per float / sequential slope)")

    chain = {}
    for name, n, runs in (("small", SMALL_N, small_chain_runs), ("large", LARGE_N, large_chain_runs)):
        chain[name] = measure_chain(name, n, ks, runs, reps, warmup_reps)
        print_chain_table(name, chain[name])

    elapsed = time.perf_counter() - started
    log(f"\ntotal {elapsed:.1f} s")

    if args.json:
        report = {
            "schema": "wgfuse.baseline.torch/1",
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "device": device,
            "quick": quick,
            "method": {
                "timer": "time.perf_counter",
                "reps": reps,
                "warmup_reps": warmup_reps,
                "sample": "wall time from before the first op to after torch.cuda.synchronize()",
                "statistic": "median per point; slope/intercept/r2 = OLS fit of median_us vs n",
            },
            "elementwise": {
                "op": f"x.mul_({SWEEP_FACTOR!r})",
                "sequential": "N ops, then one synchronize",
                "naive": "synchronize after each op",
                "large_gbs": large_gbs,
                **elementwise,
            },
            "chain": {
                "factors": "a_j = 1 + 1e-4*(j+1), j = 0..k-1",
                "time_per_run": "wall time of runs_per_sample back-to-back chain runs plus one "
                                "synchronize, divided by runs_per_sample; median over reps",
                "variants": {
                    "eager": "k in-place x.mul_(a_j) calls",
                    "eager_sync": "k in-place x.mul_(a_j) calls, synchronize after each",
                    "compiled_default": "torch.compile(mode='default') of y = x*a_0*...*a_(k-1), "
                                        "out of place; compile_s = first call",
                    "compiled_reduce_overhead": "the same with mode='reduce-overhead' (CUDA graphs), "
                                                "cudagraph_mark_step_begin() before each call",
                },
                **chain,
            },
            "elapsed_s": elapsed,
        }
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        log(f"wrote {args.json}")

    failed = [name for name, c in chain.items() if c["check"]["pass"] is False]
    if failed:
        sys.exit(f"dispatch_torch.py: compiled result differs from eager ({', '.join(failed)})")


if __name__ == "__main__":
    main()
