#!/usr/bin/env python3
"""Markdown tables of a `wgfuse bench --json` report (schema docs/bench.schema.json), as used in
docs/RESULTS.md:  bench/bench_report.py bench.json > tables.md   (Python 3 standard library only)."""
import json
import sys

VARIANTS = [
    ("naive", "naive: submit + wait per dispatch"),
    ("submit_per_dispatch", "submit per dispatch, one wait (the paper's method)"),
    ("pass_per_dispatch", "one command buffer, one pass per dispatch"),
    ("one_pass", "**one compute pass**"),
    ("gpu", "… GPU time by timestamps"),
    ("pipeline_change", "one pass, pipeline change per dispatch"),
    ("bindgroup_change", "one pass, bind-group change per dispatch (dependent)"),
    ("independent", "one pass, 4 separate buffers (independent)"),
    ("uniform_update", "queue write of the params + submit per dispatch"),
]


def series(kernel, variant, api="runtime"):
    for s in kernel["series"]:
        if s["variant"] == variant and s["api"] == api:
            return s
    return None


def per_dispatch_table(report):
    kernels = report["kernels"]
    steady = report["steady_max_n"]
    head = " | ".join(f"{k['name']} ({k['elements']:,} f32)" if k["elements"] else k["name"] for k in kernels)
    lines = [f"| µs per dispatch, slope over N ≤ {steady} | {head} |", "| --- |" + " ---: |" * len(kernels)]
    for variant, label in VARIANTS:
        cells = []
        for k in kernels:
            if variant == "gpu":
                s = series(k, "one_pass")
                cells.append(f"{s['gpu']['slope_us']:.2f}" if s and s["gpu"] else "–")
            else:
                s = series(k, variant)
                cells.append(f"{s['total_steady']['slope_us']:.2f}" if s else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    ratios = []
    for k in kernels:
        naive, one = series(k, "naive"), series(k, "one_pass")
        ratios.append(f"{naive['total_steady']['slope_us'] / one['total_steady']['slope_us']:.0f}×" if naive and one else "–")
    lines.append("| naive / one pass | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def overhead_table(report):
    lines = ["| kernel | variant | runtime µs | raw C API µs | difference total / CPU issue |", "| --- | --- | ---: | ---: | ---: |"]
    for k in report["kernels"]:
        for f in k["framework_overhead"]:
            lines.append(f"| {k['name']} | {f['variant']} | {f['runtime_slope_us']:.3f} | {f['raw_slope_us']:.3f} | "
                         f"{f['difference_us']:+.3f} / {f['issue_difference_us']:+.3f} |")
    return "\n".join(lines)


def chain_table(report):
    def wall(w):
        return f"{w['median']:,.1f} [{w['min']:,.1f}–{w['max']:,.1f}]"

    def gpu(x):
        return "–" if x is None else f"{x:,.2f}"

    lines = ["| floats | k | unfused wall | fused wall | speedup | GPU unfused / fused | bound unfused / fused | check |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for c in report["chain"]:
        u, f, chk = c["unfused"], c["fused"], c["check"]
        verdict = ("bitwise equal" if chk["bitwise_equal"] else "equal within tolerance") if chk["passed"] else "FAILED"
        lines.append(f"| {c['elements']:,} | {c['k']} | {wall(u['wall_us'])} | {wall(f['wall_us'])} | {c['speedup']:.2f}× | "
                     f"{gpu(u['gpu_us'])} / {gpu(f['gpu_us'])} | {u['bound_us']:.2f} / {f['bound_us']:.2f} | {verdict} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        report = json.load(f)
    if report.get("schema") != "wgfuse.bench/1":
        sys.exit(f"{sys.argv[1]}: schema is {report.get('schema')!r}, expected 'wgfuse.bench/1'")
    a = report["adapter"]
    print(f"wgfuse {report['wgfuse_version']} bench, {report['date_utc']}, {a['device']} ({a['backend']}, "
          f"{a['description']}); device copy {report['copy_bandwidth_gbs']:,.0f} GB/s\n")
    print(per_dispatch_table(report), "\n")
    print(overhead_table(report), "\n")
    print(chain_table(report))


if __name__ == "__main__":
    main()
