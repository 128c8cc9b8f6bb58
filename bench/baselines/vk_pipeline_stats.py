#!/usr/bin/env python3
"""The Vulkan driver's statistics (registers, spills, shared memory, ...) for every shader that Dawn
compiled in one wgfuse run.

  wgfuse generate ... --dump-shaders --verbose 2> dump.txt
  bench/baselines/vk_pipeline_stats.py --tool build/wgfuse_vk_pipeline_stats --out DIR dump.txt

Splits Dawn's log into its generated SPIR-V modules (the "Dumped generated SPIRV disassembly"
blocks), assembles each with spirv-as ($SPIRV_AS or PATH), builds a pipeline from each with
vk_pipeline_stats (VK_KHR_pipeline_executable_properties) and writes DIR/stats.jsonl and a table
DIR/stats.md: per module the kernel (wgfuse's label: family, entry point, constants), its workgroup
size and the driver's statistics. A measurement tool of the GPU machine. NVIDIA's driver (580)
reports "Local Memory Size" with bit 36 set; the table shows its low 32 bits (the bytes a thread
spills or keeps in local arrays), the JSON the raw value.
"""
import argparse
import json
import os
import re
import subprocess
import sys

SPIRV_MARK = "/* Dumped generated SPIRV disassembly */"
ASM_LINE = re.compile(r"^\s*(;|%|Op)")
KERNEL_LINE = re.compile(r"^wgfuse: compiling kernel '(.*)'$")


def modules(text):
    """(kernel label, disassembly) of each generated SPIR-V module, in the order Dawn compiled them;
    the label is wgfuse's line "compiling kernel 'family:entry{constants}'" before it."""
    out, cur, label = [], None, ""
    for line in text.splitlines():
        if SPIRV_MARK in line:
            if cur:
                out.append((label, "\n".join(cur)))
                label = ""  # one module a kernel; Dawn's own shaders have none
            cur = []
            continue
        if cur is not None:
            if not line.strip() or ASM_LINE.match(line):
                cur.append(line)
                continue
            out.append((label, "\n".join(cur)))  # the block ends where the log goes on
            cur, label = None, ""
        m = KERNEL_LINE.match(line)
        if m:
            label = m.group(1)
    if cur:
        out.append((label, "\n".join(cur)))
    return out


def describe(asm):
    size = re.search(r"OpExecutionMode %\S+ LocalSize (\d+) (\d+) (\d+)", asm)
    return {"local_size": [int(v) for v in size.groups()] if size else None}


def cell(key, value):
    if key == "Local Memory Size" and isinstance(value, int):
        return str(value & 0xFFFFFFFF)
    return str(value)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump", help="stderr of a wgfuse run with --dump-shaders --verbose")
    ap.add_argument("--tool", required=True, help="the vk_pipeline_stats binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-robust", action="store_true", help="robustBufferAccess off (Dawn's disable_robustness)")
    ap.add_argument("--ir", action="store_true", help="also the driver's internal representations, if it offers any")
    ap.add_argument("--grep", default="", help="only kernels whose label matches this regex")
    a = ap.parse_args()
    spirv_as = os.environ.get("SPIRV_AS", "spirv-as")
    os.makedirs(a.out, exist_ok=True)
    with open(a.dump, errors="replace") as f:
        mods = modules(f.read())
    if not mods:
        sys.exit(f"{a.dump}: no '{SPIRV_MARK}' blocks (was the run given --dump-shaders --verbose?)")
    rows = []
    for i, (label, asm) in enumerate(mods):
        info = describe(asm)
        info["kernel"] = label
        if a.grep and not re.search(a.grep, label):
            continue
        base = os.path.join(a.out, f"m{i:03d}")
        with open(base + ".spvasm", "w") as f:
            f.write(asm + "\n")
        r = subprocess.run([spirv_as, "--target-env", "vulkan1.1", base + ".spvasm", "-o", base + ".spv"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"module {i}: spirv-as failed: {r.stderr.strip()[:300]}", file=sys.stderr)
            continue
        cmd = [a.tool] + (["--no-robust"] if a.no_robust else []) + (["--ir"] if a.ir else []) + [base + ".spv"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(f"module {i}: {r.stderr.strip()[:300]}", file=sys.stderr)
            continue
        for line in r.stdout.splitlines():
            rec = json.loads(line)
            rec.update(info, module=i)
            rows.append(rec)
    with open(os.path.join(a.out, "stats.jsonl"), "w") as f:
        for rec in rows:
            f.write(json.dumps(rec) + "\n")
    keys = []
    for rec in rows:
        for k in rec["stats"]:
            if k not in keys:
                keys.append(k)
    with open(os.path.join(a.out, "stats.md"), "w") as f:
        f.write("| module | kernel | local size | " + " | ".join(keys) + " |\n")
        f.write("|---" * (3 + len(keys)) + "|\n")
        for rec in rows:
            f.write(f"| {rec['module']} | {rec['kernel']} | {rec['local_size']} | " +
                    " | ".join(cell(k, rec["stats"].get(k, "")) for k in keys) + " |\n")
    print(f"{len(rows)} pipelines of {len(mods)} modules: {os.path.join(a.out, 'stats.md')}")


if __name__ == "__main__":
    main()
