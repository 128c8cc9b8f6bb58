#!/usr/bin/env python3
"""The table of bench/baselines/browser_gpu.sh: the browser's suite results (browser.json, as the
page submitted them) beside the native runs of the same work on the same machine (a folder of
`wgfuse generate`, `wgfuse sim` and `wgfuse bench` JSON), as JSON and markdown.

Pairs: llm `<model> prefill|decode` tok/s against `wgfuse generate`'s prefill_tok_s and
decode_tok_s (median of its runs); sim `<workload> <strategy>` (one evaluation, wall clock) against
`wgfuse sim --mode all`'s evaluation alone (1000 / gpu_evaluation_ms, GPU time) and whole
generations (gen_per_s, GA included); dispatch `naive | submit per dispatch | one pass` µs per
dispatch against `wgfuse bench --suite dispatch`'s steady slope of the same variant on the `small`
elementwise kernel (runtime API). The browser tax is native / browser for rates, browser / native
for times.

usage: browser_report.py BROWSER_JSON NATIVE_DIR NATIVE_JSON_OUT MARKDOWN_OUT
"""
import json
import statistics
import sys
from pathlib import Path

browser_path, native_dir, native_out, md_out = sys.argv[1:5]
browser = json.loads(Path(browser_path).read_text()) if Path(browser_path).exists() else {}
native = {p.stem: json.loads(p.read_text()) for p in sorted(Path(native_dir).glob("*.json"))}
Path(native_out).write_text(json.dumps(native))


def browser_rows(suite):
    entry = browser.get("suites", {}).get(suite, {})
    return {r["name"]: r for r in (entry.get("submitted") or {}).get("results", [])}


rows = []  # (suite, name, unit, browser, native, native_what, tax)


def add(suite, name, unit, b, n, what, rate):
    tax = None
    if b and n:
        tax = n / b if rate else b / n
    rows.append((suite, name, unit, b, n, what, tax))


llm_runs = [v for k, v in native.items() if k.startswith("llm-")]
for name, r in browser_rows("llm").items():
    kind = name.rsplit(" ", 1)[-1]
    key = {"prefill": "prefill_tok_s", "decode": "decode_tok_s"}.get(kind)
    n = statistics.median(run[key] for run in llm_runs) if key and llm_runs else None
    add("llm", name, r["unit"], r["median"], n, f"wgfuse generate {key} (median of {len(llm_runs)})", True)

for name, r in browser_rows("sim").items():
    workload, strategy = name.rsplit(" ", 1)
    mode = native.get(f"sim-{workload}", {}).get("modes", {}).get(strategy)
    if mode:
        evaluation = (mode.get("gpu_evaluation_ms") or {}).get("median")
        add("sim", name, r["unit"], r["median"], 1000 / evaluation if evaluation else None,
            "wgfuse sim: evaluations/s (GPU time)", True)
        add("sim", name, r["unit"], r["median"], (mode.get("gen_per_s") or {}).get("median"),
            "wgfuse sim: whole generations/s (GA too)", True)
    else:
        add("sim", name, r["unit"], r["median"], None, "no native run", True)

variants = {"naive": "naive", "submit per dispatch": "submit_per_dispatch", "one pass": "one_pass"}
small = next((k for k in native.get("dispatch", {}).get("kernels", []) if k["name"] == "small"), None)
for name, r in browser_rows("dispatch").items():
    series = next((s for s in (small or {}).get("series", [])
                   if s["variant"] == variants.get(name) and s["api"] == "runtime"), None)
    n = (series.get("total_steady") or {}).get("slope_us") if series else None
    add("dispatch", name, r["unit"], r["median"], n, "wgfuse bench: steady slope, small kernel, runtime API", False)

fmt = lambda v: "—" if v is None else f"{v:.4g}"
a = browser.get("adapter") or {}
lines = [
    "# The browser against native, same machine, same run (bench/baselines/browser_gpu.sh)",
    "",
    f"Browser: {browser.get('user_agent', '?')}; adapter {a.get('vendor')} {a.get('architecture')} "
    f"{a.get('description')} (fallback: {a.get('fallback')}).",
    "Tax: native / browser for rates, browser / native for times (above 1: the browser is slower).",
    "",
    "| suite | result | unit | browser (median) | native | native measure | tax |",
    "|---|---|---|---|---|---|---|",
]
for suite, name, unit, b, n, what, tax in rows:
    lines.append(f"| {suite} | {name} | {unit} | {fmt(b)} | {fmt(n)} | {what} | {fmt(tax)} |")
for visit, c in (browser.get("chat") or {}).items():
    if "load_to_first_token_s" in c:
        lines.append("")
        lines.append(f"/chat, {visit} visit: ready {c['ready_ms']:.0f} ms after the page started loading, first "
                     f"token {c['first_token_ms']:.0f} ms later: page load to first token "
                     f"{c['load_to_first_token_s']:.2f} s. Phases: {json.dumps(c.get('phases'))}")
    else:
        lines.append(f"/chat, {visit} visit: {c}")
for suite, entry in (browser.get("suites") or {}).items():
    if "error" in entry or entry.get("problem"):
        lines.append(f"\n{suite}: {entry.get('error') or entry.get('problem')}")
if browser.get("errors"):
    lines.append("\nErrors: " + " | ".join(browser["errors"]))
Path(md_out).write_text("\n".join(lines) + "\n")
