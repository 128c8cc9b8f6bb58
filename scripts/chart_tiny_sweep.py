#!/usr/bin/env python3
"""Charts `wgfuse tiny --sweep --json FILE`: tokens/s against d_model, one line per strategy,
both axes logarithmic, as a standalone SVG (plain Python, no plotting library), for one slice of
the sweep (layers, sequences). Prints the crossover: the smallest width at which another strategy
reaches single's tokens/s. Several sweep files may be given (e.g. the grid and a separate d = 3,072
run); their rows are merged.

  scripts/chart_tiny_sweep.py sweep.json [more.json] --out docs/results/tiny-sweep.svg \
      [--layers 1] [--sequences 1]
"""
import argparse
import json
import math
import sys

COLORS = {"eager": "#d62728", "batched": "#ff7f0e", "layer": "#2ca02c", "single": "#1f77b4"}
W, H = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 80, 130, 40, 60


def load_rows(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        if "sweep" not in data:
            sys.exit(f"{p}: no 'sweep' array (write it with wgfuse tiny --sweep --json)")
        rows += data["sweep"]
    return rows


def series(rows, layers, sequences):
    """{strategy: [(d, tokens_per_s)]} for the rows of the slice that ran, sorted by d."""
    out = {}
    for r in rows:
        if r.get("layers") != layers or r.get("sequences") != sequences or "strategies" not in r:
            continue
        for s in r["strategies"]:
            out.setdefault(s["name"], []).append((r["d"], s["tokens_per_s"]))
    for pts in out.values():
        pts.sort()
    return out


def crossover(lines):
    """The smallest d at which a strategy other than single has at least single's tokens/s."""
    single = dict(lines.get("single", []))
    for d in sorted(single):
        for name, pts in lines.items():
            if name != "single" and dict(pts).get(d, 0) >= single[d]:
                return d, name
    return None


def log_ticks(lo, hi):
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def svg(lines, title):
    ds = [d for pts in lines.values() for d, _ in pts]
    vs = [v for pts in lines.values() for _, v in pts if v > 0]
    if not ds or not vs:
        sys.exit("no rows in this slice of the sweep (see --layers, --sequences)")
    dx0, dx1 = math.log2(min(ds)), math.log2(max(ds))
    if dx0 == dx1:
        dx0, dx1 = dx0 - 1, dx1 + 1
    yt = log_ticks(min(vs), max(vs))
    vy0, vy1 = math.log10(yt[0]), math.log10(yt[-1])

    def x(d):
        return LEFT + (math.log2(d) - dx0) / (dx1 - dx0) * (W - LEFT - RIGHT)

    def y(v):
        return H - BOTTOM - (math.log10(v) - vy0) / (vy1 - vy0) * (H - TOP - BOTTOM)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for v in yt:
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for d in sorted(set(ds)):
        out.append(f'<line x1="{x(d):.1f}" x2="{x(d):.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#eee"/>')
        out.append(f'<text x="{x(d):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{d}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 18}" text-anchor="middle">d_model (log scale)</text>')
    out.append(f'<text x="18" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {(TOP + H - BOTTOM) / 2})">generated tokens/s (log scale)</text>')
    for i, (name, pts) in enumerate(sorted(lines.items())):
        color = COLORS.get(name, "#7f7f7f")
        path = " ".join(f"{x(d):.1f},{y(v):.1f}" for d, v in pts if v > 0)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for d, v in pts:
            if v > 0:
                out.append(f'<circle cx="{x(d):.1f}" cy="{y(v):.1f}" r="3" fill="{color}"/>')
        ly = TOP + 10 + 20 * i
        out.append(f'<line x1="{W - RIGHT + 12}" x2="{W - RIGHT + 36}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{W - RIGHT + 42}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", nargs="+", help="JSON of wgfuse tiny --sweep --json")
    ap.add_argument("--out", required=True, help="the SVG to write")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--sequences", type=int, default=1)
    a = ap.parse_args()
    lines = series(load_rows(a.sweep), a.layers, a.sequences)
    seqs = "1 sequence" if a.sequences == 1 else f"{a.sequences} sequences"
    title = f"wgfuse tiny: tokens/s by width ({a.layers} layer{'s' if a.layers != 1 else ''}, {seqs})"
    with open(a.out, "w") as f:
        f.write(svg(lines, title))
    c = crossover(lines)
    widths = sorted({d for pts in lines.values() for d, _ in pts})
    print(f"wrote {a.out}: {len(lines)} strategies over d = {', '.join(map(str, widths))}")
    print(f"crossover: {c[1]} reaches single at d = {c[0]}" if c else
          "crossover: single stays fastest at every width of this slice")


if __name__ == "__main__":
    main()
