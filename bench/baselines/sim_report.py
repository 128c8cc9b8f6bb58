#!/usr/bin/env python3
"""Turns the output directory of run_sim.sh into Markdown tables for docs/RESULTS.md.

Run: python3 bench/baselines/sim_report.py OUT_DIR > report.md

Everything printed is read from the JSON files; nothing is filled in by hand.
Missing measurements print as "-", failures with their message. The team strategy (`team`, every
workload where the adapter has subgroups; it replaced Market's hand-written `coop`) gets its
columns and target rows where a wgfuse JSON has it; a run without it prints "-" there and leaves
it out of the targets.
"""

import glob
import json
import os
import re
import sys

WORKLOADS = ["rastrigin", "acrobot", "cartpole", "mountaincar", "market"]
DEFAULT = {"rastrigin": (4096, 2000), "acrobot": (4096, 500), "cartpole": (4096, 500),
           "mountaincar": (4096, 200), "market": (10000, 1500)}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(x, digits=4):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def point(j, pop, steps):
    """The measured point (pop, steps) of a baseline's JSON, or None."""
    if not j:
        return None
    for p in j.get("points", []):
        if p.get("pop") == pop and p.get("steps") == steps:
            return p
    return None


def rate(p):
    if not p:
        return None
    if "error" in p:
        return "failed"
    return p["gen_per_s"]["median"]


def spread(d):
    """'median [min-max]' of a gen_per_s dict, or '-'."""
    if not d or d.get("median") is None:
        return "-"
    return f"{fmt(d['median'])} [{fmt(d.get('min'))}–{fmt(d.get('max'))}]"


def rate_spread(p):
    if not p:
        return "-"
    if "error" in p:
        return "failed"
    return spread(p.get("gen_per_s"))


STRATEGIES = ("perstep", "batched", "fused", "team")


def agreement(mine, theirs, tol_rel=1e-4, tol_abs=1e-3):
    if not mine or not theirs or len(mine) != len(theirs):
        return None
    ok = sum(1 for a, b in zip(mine, theirs) if abs(a - b) <= max(tol_abs, tol_rel * abs(b)))
    return f"{ok}/{len(theirs)}"


def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
        return a / b
    return None


def cuda_runs(out, w):
    """(json, "team4 fast") of every sim_cuda run of workload w (files cuda_<w>_<variant>_<math>.json)."""
    runs = []
    for f in sorted(glob.glob(os.path.join(out, f"cuda_{w}_*.json"))):
        j = load(f)
        if j:
            runs.append((j, f"{j.get('label', '?')} {j.get('math', '?')}"))
    return runs


def cuda_best(out, w, pop, L, math="fast"):
    """The fastest sim_cuda run of w at (pop, L) with that arithmetic: (gen/s, label, json) or None.
    The CUDA column is the fast-math kernel: WGSL's builtins are allowed the same approximations."""
    best = None
    for j, label in cuda_runs(out, w):
        g = rate(point(j, pop, L))
        if j.get("math") == math and isinstance(g, (int, float)) and (best is None or g > best[0]):
            best = (g, label, j)
    return best


def cuda_cell(best):
    return "-" if not best else f"{fmt(best[0])} ({best[1]})"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    info = load(os.path.join(out, "wgfuse_info.json")) or {}
    print("## wgfuse sim: results\n")
    smi = ""
    try:
        with open(os.path.join(out, "nvidia-smi.txt")) as f:
            m = re.search(r"NVIDIA [A-Z0-9 ]+\S*", f.read())
            smi = m.group(0) if m else ""
    except OSError:
        pass
    print(f"- adapter (wgfuse): {info.get('device', '?')} ({info.get('backend', '?')}, {info.get('adapter_type', '?')}),"
          f" driver {info.get('description', '?')}")
    if smi:
        print(f"- nvidia-smi: {smi}")
    for name in ("python_versions.txt", "nvcc_version.txt"):
        try:
            with open(os.path.join(out, name)) as f:
                lines = [ln.strip() for ln in f if ln.strip()]
                print(f"- {name.split('.')[0]}: {lines[-1] if lines else '?'}")
        except OSError:
            pass
    try:
        with open(os.path.join(out, "run_sim.log")) as f:
            first = f.readline().strip()
            print(f"- run: {first}")
    except OSError:
        pass
    print()

    # ---- default sizes ----
    print("### Default sizes: generations per second (median), one generation = evaluation + GA + read-back\n")
    print("| workload | pop x L | wgfuse per-step | wgfuse batched | wgfuse fused | wgfuse team | CUDA (fastest, fast-math) |"
          " JAX scan+vmap | PyTorch eager | torch.compile (step) | fused / JAX | fused / eager | CUDA / fused |"
          " fused GPU ms | team GPU ms | CUDA evaluation ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    targets = []
    spreads = []
    for w in WORKLOADS:
        pop, L = DEFAULT[w]
        wj = load(os.path.join(out, f"wgfuse_{w}.json"))
        modes = (wj or {}).get("modes", {})
        r = {m: modes.get(m, {}).get("gen_per_s", {}).get("median") for m in STRATEGIES}
        cbest = cuda_best(out, w, pop, L)
        cuda = cbest[0] if cbest else None
        jax_r = rate(point(load(os.path.join(out, f"jax_{w}.json")), pop, L))
        eager = rate(point(load(os.path.join(out, f"torch_eager_{w}.json")), pop, L))
        comp = rate(point(load(os.path.join(out, f"torch_compile_step_{w}.json")), pop, L))
        fj, fe, cf = ratio(r["fused"], jax_r), ratio(r["fused"], eager), ratio(cuda, r["fused"])
        gms = (modes.get("fused", {}).get("gpu_evaluation_ms") or {}).get("median")
        cms = (modes.get("team", {}).get("gpu_evaluation_ms") or {}).get("median")
        print(f"| {w} | {pop:,} x {L:,} | {fmt(r['perstep'])} | {fmt(r['batched'])} | {fmt(r['fused'])} | {fmt(r['team'])} |"
              f" {cuda_cell(cbest)} | {fmt(jax_r)} | {fmt(eager)} | {fmt(comp)} | {fmt(fj, 3)} | {fmt(fe, 3)} | {fmt(cf, 3)} |"
              f" {fmt(gms)} | {fmt(cms)} |"
              f" {fmt(((point(cbest[2], pop, L) or {}).get('eval_ms') or {}).get('median') if cbest else None)} |")
        if w in ("acrobot", "market"):
            for m in ("fused", "team"):
                if r[m] is not None:
                    targets.append((w, m, r[m], jax_r, eager, cuda))
        cuda_pts = [f"{label} {rate_spread(point(j, pop, L))}" for j, label in cuda_runs(out, w) if point(j, pop, L)]
        spreads.append((w, pop, L, [spread(modes.get(m, {}).get("gen_per_s")) for m in STRATEGIES],
                        "/".join(str(modes[m].get("dispatches_per_generation", "?")) for m in STRATEGIES if m in modes),
                        "/".join(str(modes[m].get("submits_per_generation", "?")) for m in STRATEGIES if m in modes),
                        "; ".join(cuda_pts) or "-",
                        [rate_spread(point(load(os.path.join(out, f"{b}_{w}.json")), pop, L))
                         for b in ("jax", "torch_eager", "torch_compile_step")]))
    print()
    print("Median [min–max] of the same runs (dispatches and submits per generation in the order of the"
          " strategies present: per-step/batched/fused[/team]):\n")
    print("| workload | pop x L | per-step | batched | fused | team | dispatches / gen | submits / gen | CUDA |"
          " JAX | PyTorch eager | torch.compile (step) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for w, pop, L, ws, disp, subm, cuda_s, bs in spreads:
        print(f"| {w} | {pop:,} x {L:,} | {' | '.join(ws)} | {disp} | {subm} | {cuda_s} | {' | '.join(bs)} |")
    print()
    print("Targets (Market and Acrobot), per wgfuse strategy that ran (fused everywhere; team where the"
          " adapter has subgroups): >= 5x JAX, >= 100x PyTorch eager, within 1.25x of the fastest fast-math CUDA kernel.\n")
    print("| workload | strategy | gen/s | vs JAX (>= 5x) | vs PyTorch eager (>= 100x) | CUDA / strategy (<= 1.25) |")
    print("|---|---|---|---|---|---|")

    def verdict(v, ok):
        return "not measured" if v is None else (f"{fmt(v, 3)} ({'met' if ok(v) else 'NOT met'})")
    for w, m, g, jax_r, eager, cuda in targets:
        print(f"| {w} | {m} | {fmt(g)} | {verdict(ratio(g, jax_r), lambda v: v >= 5)} |"
              f" {verdict(ratio(g, eager), lambda v: v >= 100)} | {verdict(ratio(cuda, g), lambda v: v <= 1.25)} |")
    print()

    # ---- every CUDA variant ----
    print("### Hand-written CUDA (bench/baselines/sim_cuda.cu), every variant at the default sizes\n")
    print("fast = the intrinsics __sinf, __cosf, __expf, __fdividef; accurate = libm and IEEE division."
          " The check compares generation 0 with wgfuse's CPU double reference before timing"
          " (a failed check exits 3 and writes no JSON).\n")
    print("| workload | variant | arithmetic | evaluation ms (median [min–max]) | gen/s (median [min–max]) | check |")
    print("|---|---|---|---|---|---|")
    for w in WORKLOADS:
        pop, L = DEFAULT[w]
        for j, _ in cuda_runs(out, w):
            p = point(j, pop, L)
            if not p:
                continue
            chk = j.get("check")
            chk_s = "not run" if not chk else (f"ok ({chk.get('samples')} samples at {chk.get('horizon')} steps)"
                                               if chk.get("pass") else "FAIL")
            print(f"| {w} | {j.get('label')} (block {j.get('block')}) | {j.get('math')} |"
                  f" {spread(p.get('eval_ms'))} | {rate_spread(p)} | {chk_s} |")
    print()

    # ---- checks ----
    print("### Equivalence (generation-0 population)\n")
    print("| workload | per-step = batched | fused vs per-step (max rel diff) | team vs per-step (max rel diff) |"
          " GPU vs CPU double (agree, horizon; fused / team) |"
          " JAX vs wgfuse (at L / at horizon) | eager vs wgfuse | CUDA vs wgfuse | JAX vs CPU double at L |")
    print("|---|---|---|---|---|---|---|---|---|")
    for w in WORKLOADS:
        pop, L = DEFAULT[w]
        wj = load(os.path.join(out, f"wgfuse_{w}.json")) or {}
        c = wj.get("check", {})
        pb = c.get("perstep_vs_batched", {})
        pf = c.get("fused_vs_perstep", {})
        pc = c.get("team_vs_perstep", {})
        ref = c.get("reference", {}).get("fused", {})
        refc = c.get("reference", {}).get("team", {})
        s = wj.get("sample_fitness", {})

        def vs(j):
            p = point(j, pop, L)
            if not p:
                return "-"
            if "error" in p:
                return "failed"
            sf = p.get("sample_fitness")
            if not sf or not s:
                return "-"
            a = agreement(sf.get("values"), s.get("values"))
            b = agreement(sf.get("values_at_horizon"), s.get("values_at_horizon"))
            return f"{a} / {b} (H={s.get('horizon')})"

        def vs_ref(j):
            p = point(j, pop, L)
            sf = (p or {}).get("sample_fitness")
            return agreement(sf.get("values"), s.get("reference")) if sf and s else "-"

        cbest = cuda_best(out, w, pop, L)
        cuda_j = cbest[2] if cbest else None
        jax_j = load(os.path.join(out, f"jax_{w}.json"))
        print(f"| {w} | {('yes' if pb.get('bitwise') else 'NO') if pb else '-'} |"
              f" {(('ok ' if pf.get('pass') else 'FAIL ') + fmt(pf.get('max_rel'), 3)) if pf else '-'} |"
              f" {(('ok ' if pc.get('pass') else 'FAIL ') + fmt(pc.get('max_rel'), 3)) if pc else '-'} |"
              f" {(str(ref.get('agree')) + '/' + str(ref.get('samples')) + ' at ' + str(ref.get('horizon'))) if ref else '-'}"
              f"{(' / ' + str(refc.get('agree')) + '/' + str(refc.get('samples'))) if refc else ''} |"
              f" {vs(jax_j)} | {vs(load(os.path.join(out, f'torch_eager_{w}.json')))} |"
              f" {vs(cuda_j) if cuda_j else 'n/a'} | {vs_ref(jax_j)} |")
    print("\nAgreement counts individuals of the 64-individual sample whose fitness matches within"
          " max(1e-3, 1e-4 x |value|). Acrobot is chaotic: different f32 implementations part after"
          " ~100 steps, so its comparisons are also given at the horizon H (docs/SIMULATIONS.md).\n")

    # ---- sweeps ----
    def sweep_table(w, axis, values, fixed):
        print(f"#### {w}: {'episode length L' if axis == 'L' else 'population'} sweep"
              f" ({'pop' if axis == 'L' else 'L'} = {fixed:,})\n")
        print("| " + ("L" if axis == "L" else "pop") + " | wgfuse per-step | wgfuse batched | wgfuse fused [min–max] |"
              " fused GPU ms | wgfuse team [min–max] | team GPU ms | fused/batched | fused/per-step | CUDA | JAX |"
              " fused/JAX | team/JAX | PyTorch eager |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for v in values:
            pop, L = (fixed, v) if axis == "L" else (v, fixed)
            wj = load(os.path.join(out, "sweep", f"wgfuse_{w}_p{pop}_L{L}.json")) or {}
            m = wj.get("modes", {})
            r = {k: m.get(k, {}).get("gen_per_s", {}).get("median") for k in STRATEGIES}
            gms = {k: (m.get(k, {}).get("gpu_evaluation_ms") or {}).get("median") for k in STRATEGIES}
            cuda_s = cuda_cell(cuda_best(out, w, pop, L))
            jx = rate(point(load(os.path.join(out, f"jax_sweep_{w}.json")), pop, L))
            te = rate(point(load(os.path.join(out, f"torch_eager_sweep_{w}.json")), pop, L))
            print(f"| {v:,} | {fmt(r['perstep'])} | {fmt(r['batched'])} | {spread(m.get('fused', {}).get('gen_per_s'))} |"
                  f" {fmt(gms['fused'], 3)} | {spread(m.get('team', {}).get('gen_per_s'))} | {fmt(gms['team'], 3)} |"
                  f" {fmt(ratio(r['fused'], r['batched']), 3)} | {fmt(ratio(r['fused'], r['perstep']), 3)} |"
                  f" {cuda_s} | {fmt(jx)} | {fmt(ratio(r['fused'], jx), 3)} | {fmt(ratio(r['team'], jx), 3)} | {fmt(te)} |")
        print()

    print("### Sweeps (generations per second, median)\n")
    Ls = [100, 500, 1500, 5000]
    sweep_table("acrobot", "L", Ls, 4096)
    sweep_table("acrobot", "pop", [512, 2048, 8192, 32768, 65536], 500)
    sweep_table("market", "L", Ls, 10000)
    sweep_table("market", "pop", [512, 2048, 10000, 32768, 65536], 1500)

    # ---- failures ----
    print("### Failures and skipped stages, as reported\n")
    any_ = False
    for f in sorted(glob.glob(os.path.join(out, "*.json"))):
        j = load(f)
        for p in (j or {}).get("points", []) if isinstance(j, dict) else []:
            if "error" in p:
                any_ = True
                print(f"- {os.path.basename(f)} pop {p.get('pop')} L {p.get('steps')}: {p['error'][:300]}")
    try:
        with open(os.path.join(out, "run_sim.log")) as f:
            for ln in f:
                if "SKIPPED" in ln or ("exit" in ln and "exit 0" not in ln):
                    any_ = True
                    tail = ""
                    m = re.search(r"end   (\S+):", ln)
                    if m:
                        try:
                            with open(os.path.join(out, m.group(1) + ".txt")) as t:
                                lines = [x.strip() for x in t if x.strip()]
                                tail = f" -- last output: `{lines[-1][:300]}`" if lines else ""
                        except OSError:
                            pass
                    print(f"- log: {ln.strip()}{tail}")
    except OSError:
        pass
    if not any_:
        print("- none")


if __name__ == "__main__":
    main()
