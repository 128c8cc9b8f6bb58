#!/usr/bin/env python3
"""A workload file against the same workload built in (issue 27's target: within 5% on the H100).

For each built-in W, its file kernels/sim_W.wgsl copied to a temporary directory runs through
`wgfuse sim FILE.wgsl` and the built-in through `wgfuse sim W`, alternately (built-in, file,
built-in, file, ...) so that clock and thermal drift fall on both, with the same sizes, seed and
modes. Per mode it prints the median generations per second of each over all rounds, their ratio,
and the spread of the built-in's own round medians (max/min), the noise the ratio is to be read
against. Exit 1 where a ratio is off by more than --tolerance and more than that spread.

Run (repository root, on the GPU machine):
  python3 bench/baselines/sim_file_vs_builtin.py --wgfuse build/wgfuse --json out.json
  python3 bench/baselines/sim_file_vs_builtin.py --workloads acrobot,market --rounds 5
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
WORKLOADS = ["acrobot", "cartpole", "mountaincar", "rastrigin", "market"]


def run(wgfuse, adapter, target, args, out):
    cmd = [wgfuse, "--adapter", adapter, "sim", target, *args, "--quiet", "--json", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wgfuse", default=os.path.join(ROOT, "build", "wgfuse"))
    p.add_argument("--adapter", default="gpu")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--rounds", type=int, default=3, help="alternations of built-in and file per workload")
    p.add_argument("--generations", type=int, default=32)
    p.add_argument("--mode", default="all", help="wgfuse sim --mode (all: per-step, batched, fused, team)")
    p.add_argument("--pop", type=int, help="population (default: the workload's)")
    p.add_argument("--steps", type=int, help="episode length (default: the workload's)")
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--json", help="write every round's rates and the ratios here")
    o = p.parse_args()

    tmp = tempfile.mkdtemp(prefix="wgfuse-file-vs-builtin-")
    report, failed = {}, []
    try:
        for w in o.workloads.split(","):
            copy = os.path.join(tmp, f"{w}.wgsl")
            shutil.copyfile(os.path.join(ROOT, "kernels", f"sim_{w}.wgsl"), copy)
            args = ["--mode", o.mode, "--generations", str(o.generations), "--seed", "1"]
            args += ["--pop", str(o.pop)] if o.pop else []
            args += ["--steps", str(o.steps)] if o.steps else []
            rounds = {"builtin": [], "file": []}
            for r in range(o.rounds):
                for kind, target in (("builtin", w), ("file", copy)):
                    j = run(o.wgfuse, o.adapter, target, args, os.path.join(tmp, f"{w}_{kind}_{r}.json"))
                    rounds[kind].append({m: v["gen_per_s"]["median"] for m, v in j["modes"].items()})
                    sizes = (j["pop"], j["steps"])
            report[w] = {"pop": sizes[0], "steps": sizes[1], "rounds": rounds, "modes": {}}
            for m in rounds["builtin"][0]:
                b = [x[m] for x in rounds["builtin"]]
                f = [x[m] for x in rounds["file"]]
                ratio = statistics.median(f) / statistics.median(b)
                spread = max(b) / min(b) - 1
                ok = abs(ratio - 1) <= max(o.tolerance, spread)
                report[w]["modes"][m] = {"builtin": statistics.median(b), "file": statistics.median(f),
                                         "ratio": ratio, "builtin_spread": spread, "ok": ok}
                print(f"{w:12s} pop {sizes[0]:6d} L {sizes[1]:5d} {m:8s} built-in {statistics.median(b):10.1f} "
                      f"gen/s  file {statistics.median(f):10.1f} gen/s  file/built-in {ratio:.3f}  "
                      f"(built-in rounds spread {spread * 100:.1f}%){'' if ok else '  OFF'}")
                if not ok:
                    failed.append(f"{w} {m}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"schema": "wgfuse.baseline.sim_file_vs_builtin/1", "tolerance": o.tolerance,
                       "workloads": report}, f, indent=1)
    if failed:
        print(f"off by more than {o.tolerance * 100:.0f}% and the built-in's own spread: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
