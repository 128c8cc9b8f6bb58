#!/usr/bin/env python3
"""The driver-statistics tool end to end where CI runs (SwiftShader): a real Dawn log of wgfuse's
kernels is split into labelled SPIR-V modules, each assembles, and the tool, given the modules,
refuses clearly (SwiftShader offers no pipeline statistics); a file that is not SPIR-V is named.

  test_vk_pipeline_stats.py --tool wgfuse_vk_pipeline_stats --wgfuse wgfuse
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench", "baselines"))
import vk_pipeline_stats  # noqa: E402

SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"


def check(ok, what):
    if not ok:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--wgfuse", required=True)
    a = ap.parse_args()
    env = dict(os.environ)
    if "VK_DRIVER_FILES" not in env and os.path.exists(SWIFTSHADER_ICD):
        env["VK_DRIVER_FILES"] = SWIFTSHADER_ICD
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([a.wgfuse, "bench", "--suite", "dispatch", "--quick", "--dump-shaders", "--verbose"],
                             capture_output=True, text=True, env=env, timeout=240)
        check(run.returncode == 0, f"wgfuse bench --dump-shaders ran (rc {run.returncode})")
        dump = os.path.join(tmp, "dump.txt")
        with open(dump, "w") as f:
            f.write(run.stderr)

        mods = vk_pipeline_stats.modules(run.stderr)
        labels = [label for label, _ in mods]
        check(len(mods) >= 4, f"the log holds several SPIR-V modules ({len(mods)})")
        check("dispatch:empty" in labels and "dispatch:empty{PIPELINE_TAG=1}" in labels,
              f"modules carry wgfuse's kernel labels, constants included ({labels[:6]})")
        check(all(vk_pipeline_stats.describe(asm)["local_size"] for _, asm in mods),
              "every module has its workgroup size")

        out = os.path.join(tmp, "st")
        split = subprocess.run([sys.executable, vk_pipeline_stats.__file__, dump, "--tool", a.tool, "--out", out],
                               capture_output=True, text=True, env=env, timeout=240)
        check(split.returncode == 0, f"the splitter ran (rc {split.returncode})")
        spv = sorted(f for f in os.listdir(out) if f.endswith(".spv"))
        check(len(spv) == len(mods), f"every module assembled ({len(spv)} of {len(mods)})")
        for f in spv:
            with open(os.path.join(out, f), "rb") as h:
                check(h.read(4) == b"\x03\x02\x23\x07", f"{f} is a SPIR-V binary")
        refusals = [line for line in split.stderr.splitlines()
                    if "does not offer VK_KHR_pipeline_executable_properties" in line]
        check(len(refusals) == len(mods), f"the tool names the missing extension for each module ({len(refusals)})")
        check(f"0 pipelines of {len(mods)} modules" in split.stdout, "no statistics are made up")

        bad = os.path.join(tmp, "bad.spv")
        with open(bad, "wb") as h:
            h.write(b"not spir-v, 24 bytes long")
        r = subprocess.run([a.tool, bad], capture_output=True, text=True, env=env, timeout=60)
        check(r.returncode == 1 and "not a SPIR-V binary" in r.stderr and bad in r.stderr,
              f"a file that is not SPIR-V is refused by name ({r.stderr.strip()})")


if __name__ == "__main__":
    main()
