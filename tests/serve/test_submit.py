"""`wgfuse bench --submit URL` and `wgfuse sim ... --submit URL` against a real `wgfuse serve` on
loopback: the native results arrive with their equivalence checks and the embedded kernel version;
a rejection prints the server's reason, an unreachable server says so.
Usage: test_submit.py WGFUSE"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from serve_support import Database, Server, free_port


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def submission_id(out):
    m = re.search(r"submission id (\d+)", out)
    assert m, out
    return int(m.group(1))


def main(wgfuse):
    db = Database("sqlite")
    server = Server(wgfuse, db, "--rate", "off")
    url = f"http://127.0.0.1:{server.port}"
    try:
        version = server.get_json("/kernels/index.json")["version"]
        sim = run([wgfuse, "--adapter", "cpu", "sim", "cartpole", "--pop", "96", "--steps", "40", "--generations", "3",
                   "--mode", "all", "--quiet", "--submit", url])
        assert sim.returncode == 0, sim.stderr
        sid = submission_id(sim.stdout)
        rows = server.get_json("/api/results?suite=sim")["rows"]
        assert rows and all(r["submission_id"] == sid for r in rows)
        names = {r["name"] for r in rows}
        assert {"cartpole perstep", "cartpole fused"} <= names, names
        for r in rows:
            assert r["source"] == "native" and r["browser"] is None and r["kernel_version"] == version
            assert r["unit"] == "gen/s" and r["n_samples"] == 3 and r["equivalence"]["passed"] is True
            assert r["sizes"]["pop"] == 96 and r["sizes"]["steps"] == 40
            assert (r["speedup"] is None) == (r["name"] == "cartpole perstep"), r
        # A workload file's results go to suite sim-file, even under a built-in's name: never among the
        # built-ins' figures.
        builtin_rows = len(rows)
        kernels = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels")
        with tempfile.TemporaryDirectory(prefix="wgfuse-submit-") as tmp:
            copy = os.path.join(tmp, "cartpole.wgsl")
            shutil.copyfile(os.path.join(kernels, "sim_cartpole.wgsl"), copy)
            sim = run([wgfuse, "--adapter", "cpu", "sim", copy, "--pop", "32", "--steps", "10", "--generations",
                       "1", "--mode", "fused", "--quiet", "--submit", url])
        assert sim.returncode == 0, sim.stderr
        sid = submission_id(sim.stdout)
        rows = server.get_json(f"/api/results?submission={sid}")["rows"]
        assert [(r["suite"], r["name"]) for r in rows] == [("sim-file", "cartpole fused")], rows
        assert len(server.get_json("/api/results?suite=sim")["rows"]) == builtin_rows
        bench = run([wgfuse, "--adapter", "cpu", "bench", "--quick", "--kernels", "empty", "--submit", url])
        assert bench.returncode == 0, bench.stderr
        sid = submission_id(bench.stdout)
        rows = server.get_json("/api/results?suite=chain")["rows"]
        assert rows and all(r["submission_id"] == sid for r in rows)
        ks = sorted({r["sizes"]["ops"] for r in rows})
        assert ks == [1, 2, 4, 8], ks
        for r in rows:
            fused = r["name"].startswith("fused")
            assert r["n_samples"] == 3 and r["unit"] == "us" and r["equivalence"]["passed"] is True
            assert (r["baseline"] == f"unfused k={r['sizes']['ops']}") == fused and (r["speedup"] is None) != fused
    finally:
        code, _, err = server.stop()
        assert code == 0, err
    # A server that refuses (its rate limit: one request a minute, taken by the first post) has
    # its reason printed.
    limited = Server(wgfuse, db, "--rate", "1/min")
    try:
        args = [wgfuse, "--adapter", "cpu", "sim", "cartpole", "--pop", "32", "--steps", "10", "--generations", "1",
                "--quiet", "--submit", f"http://127.0.0.1:{limited.port}"]
        assert run(args).returncode == 0
        refused = run(args)
        assert refused.returncode == 1 and "rejected the results (HTTP 429): rate limit" in refused.stderr, refused
    finally:
        limited.stop()
        db.close()
    down = run([wgfuse, "--adapter", "cpu", "sim", "cartpole", "--pop", "32", "--steps", "10", "--generations", "1",
                "--quiet", "--submit", f"http://127.0.0.1:{free_port()}"])
    assert down.returncode == 1 and "cannot reach the server" in down.stderr, down
    bad = run([wgfuse, "--adapter", "cpu", "sim", "cartpole", "--pop", "32", "--steps", "10", "--generations", "1",
               "--quiet", "--submit", "ftp://example"])
    assert bad.returncode == 1 and "--submit ftp://example: expected http://" in bad.stderr, bad
    print("PASSED")


if __name__ == "__main__":
    main(sys.argv[1])
