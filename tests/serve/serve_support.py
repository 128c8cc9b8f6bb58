"""Helpers for the `wgfuse serve` tests: start the server (SQLite or a PostgreSQL server of the
test's own) on a free loopback port, talk HTTP with the standard library, make submissions."""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PG_BIN = "/usr/lib/postgresql/15/bin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A throwaway PostgreSQL server in a temporary directory, on a free loopback port. PostgreSQL
    refuses to run as root, so as root it runs as `nobody` (runuser)."""

    def __init__(self):
        if not os.path.exists(f"{PG_BIN}/initdb"):
            raise SkipTest(f"PostgreSQL server not installed ({PG_BIN}/initdb missing): apt-get install postgresql")
        self.dir = tempfile.mkdtemp(prefix="wgfuse-pg-")
        self.port = free_port()
        self.as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody", "nogroup")
            os.chmod(self.dir, 0o700)
            self.as_user = ["runuser", "-u", "nobody", "--"]
            self.user = "nobody"
        else:
            import pwd
            self.user = pwd.getpwuid(os.geteuid()).pw_name
        data = f"{self.dir}/data"
        self._run([f"{PG_BIN}/initdb", "-D", data, "-A", "trust", "-U", self.user, "--no-sync", "-E", "UTF8"])
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run([f"{PG_BIN}/pg_ctl", "-D", data, "-o", opts, "-l", f"{self.dir}/log", "-w", "start"])
        self._run([f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user, "wgfuse"])

    def uri(self):
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/wgfuse"

    def _run(self, cmd):
        subprocess.run(self.as_user + cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/")

    def stop(self):
        try:
            self._run([f"{PG_BIN}/pg_ctl", "-D", f"{self.dir}/data", "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class SkipTest(Exception):
    pass


class Database:
    """--db for a fresh database of the given kind ("sqlite" or "postgres"), kept across restarts."""

    def __init__(self, kind):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix="wgfuse-serve-")
        self.pg = Postgres() if kind == "postgres" else None

    def target(self):
        return self.pg.uri() if self.pg else f"{self.dir}/results.sqlite"

    def close(self):
        if self.pg:
            self.pg.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# The kernel version the server serves (every server of one binary serves the same): submissions
# carry it, or the server flags their results (an unknown kernel version).
KERNEL_VERSION = None


class Server:
    def __init__(self, wgfuse, db, *extra):
        global KERNEL_VERSION
        self.port = None
        self.proc = subprocess.Popen([wgfuse, "serve", "--port", "0", "--db", db.target(), *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.proc.kill()
            raise RuntimeError(f"wgfuse serve did not start: {line}{self.proc.stderr.read()}")
        self.port = int(line.split("http://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        KERNEL_VERSION = self.get_json("/kernels/index.json")["version"]

    def request(self, method, path, body=None, headers=None, source="127.0.0.1", timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(source, 0))
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def post(self, submission, **kw):
        body = submission if isinstance(submission, (bytes, str)) else json.dumps(submission)
        return self.request("POST", "/api/results", body, {"Content-Type": "application/json"}, **kw)

    def get_json(self, path, **kw):
        status, headers, body = self.request("GET", path, **kw)
        assert status == 200, f"GET {path}: {status} {body[:300]!r}"
        return json.loads(body)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return self.proc.returncode, out, err


def submission(rng, n_results=2, source="browser", suite=None, kernel_version=None):
    """A valid, plausible, random submission (odd values, never zeros)."""
    kernel_version = kernel_version or KERNEL_VERSION or "0123456789abcdef"
    results = []
    for k in range(n_results):
        samples = [rng.uniform(5, 50) for _ in range(rng.randint(1, 9))]
        s = sorted(samples)
        n = len(s)
        median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
        mean = sum(s) / n
        speedup = rng.uniform(0.5, 40) if k % 2 else None
        results.append({
            "suite": suite or rng.choice(["dispatch", "chain", "sim", "tiny"]),
            "name": rng.choice(["one pass", "naive", "acrobot fused", "single"]),
            "kernel_version": kernel_version,
            "sizes": {"dispatches": rng.randint(1, 999), "elements": rng.randint(1, 1 << 20)},
            "unit": "us", "samples": samples, "median": median, "min": s[0], "max": s[-1],
            "std": (sum((x - mean) ** 2 for x in s) / n) ** 0.5,
            "dispatches": rng.randint(0, 500), "submits": rng.randint(1, 9),
            "speedup": speedup, "baseline": "naive" if speedup is not None else None,
            "bandwidth_gbs": rng.uniform(1, 900) if k % 3 == 0 else None, "bound_gbs": None,
            "equivalence": {"passed": True, "compared": "fused vs unfused", "max_abs_diff": rng.uniform(0, 1e-6),
                            "tolerance": 1e-5},
        })
    return {
        "schema_version": 1, "source": source,
        "client_version": "wgfuse-web 0.1.0" if source == "browser" else "wgfuse 0.1.0",
        "adapter": {"vendor": rng.choice(["google", "nvidia", "amd"]), "architecture": "swiftshader", "device": "",
                    "description": "SwiftShader Device", "backend": "vulkan", "features": ["subgroups"],
                    "limits": {"maxComputeWorkgroupSizeX": 256}},
        "browser": {"name": "Chromium", "version": "156.0.8078.79"} if source == "browser" else None,
        "os": "Linux x86_64", "results": results,
    }


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main_with_db(run, argv):
    """Runs run(wgfuse, db_kind) for the test's command line `WGFUSE sqlite|postgres`: exit 0 when it
    passes, 77 (ctest's SKIP_RETURN_CODE) when it cannot run here, saying why."""
    wgfuse, kind = argv[1], argv[2]
    try:
        run(wgfuse, kind)
    except SkipTest as e:
        print(f"SKIPPED: {e}")
        return 77
    print("PASSED")
    return 0
