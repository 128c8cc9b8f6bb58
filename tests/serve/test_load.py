"""Load and faults for `wgfuse serve`: N submissions from 16 concurrent clients while 200 slow
connections are held open (trickling header bytes, reopened when the server cuts them off), nothing
lost, p50/p99 latency printed; then the same load killed with SIGKILL midway, the server restarted on the same
database, and every acknowledged submission found with its rows; and SIGTERM during load drains the
requests in flight and exits 0.
Usage: test_load.py WGFUSE sqlite|postgres [SUBMISSIONS [SLOW_CONNECTIONS (default 200)]]"""
import http.client
import json
import random
import signal
import socket
import sys
import threading
import time

from serve_support import Database, Server, main_with_db, percentile, submission

CLIENTS = 16


class SlowCrowd:
    """`count` connections from as many loopback addresses, each sending a byte of a request head
    every half second; a connection the server cuts off (its head deadline) is opened again."""

    def __init__(self, server, count=200):
        self.server, self.count, self.stop, self.reopened = server, count, threading.Event(), 0
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _open(self, k):
        s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5,
                                     source_address=(f"127.0.{10 + k // 250}.{1 + k % 250}", 0))
        s.setblocking(False)
        return s

    def _run(self):
        socks = [self._open(k) for k in range(self.count)]
        if not socks:
            return
        n = 0
        while not self.stop.wait(0.5):
            for k, s in enumerate(socks):
                try:
                    s.send(b"GET /api/results HTTP/1.1\r\n"[n % 28:n % 28 + 1])
                except OSError:
                    s.close()
                    socks[k] = self._open(k)
                    self.reopened += 1
            n += 1
        for s in socks:
            s.close()

    def close(self):
        self.stop.set()
        self.thread.join()


def client_loop(server, seed, count, acknowledged, latencies, errors, stop):
    """Posts `count` submissions over one keep-alive connection (reconnecting when it drops);
    records (id, results) for every 201."""
    rng = random.Random(seed)
    conn = None
    for _ in range(count):
        if stop.is_set():
            return
        s = submission(rng, n_results=rng.randint(1, 4))
        body = json.dumps(s)
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            t0 = time.perf_counter()
            conn.request("POST", "/api/results", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            raw = r.read()
            latencies.append(time.perf_counter() - t0)
            if r.status != 201:
                errors.append(f"{r.status} {raw[:200]!r}")
                continue
            acknowledged.append((json.loads(raw)["id"], s))
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            errors.append(repr(e))
            if conn:
                conn.close()
            conn = None
            if stop.is_set():
                return
    if conn:
        conn.close()


def load(server, total, stop=None):
    stop = stop or threading.Event()
    acknowledged, latencies, errors = [], [], []
    per_client = [total // CLIENTS + (1 if k < total % CLIENTS else 0) for k in range(CLIENTS)]
    threads = [threading.Thread(target=client_loop, args=(server, 1000 + k, n, acknowledged, latencies, errors, stop))
               for k, n in enumerate(per_client)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    return threads, acknowledged, latencies, errors, t0


def every_row_present(server, acknowledged):
    """Each acknowledged submission is stored with exactly its results, in order."""
    stored = {}
    offset = 0
    while True:
        page = server.get_json(f"/api/results?limit=1000&offset={offset}")
        for row in page["rows"]:
            stored.setdefault(row["submission_id"], []).append(row)
        offset += len(page["rows"])
        if offset >= page["total"] or not page["rows"]:
            break
    missing = [sid for sid, s in acknowledged if sid not in stored]
    assert not missing, f"{len(missing)} acknowledged submissions lost, e.g. {missing[:5]}"
    for sid, s in acknowledged:
        rows = stored[sid]
        assert len(rows) == len(s["results"]), (sid, len(rows), len(s["results"]))
        for row, r in zip(rows, s["results"]):
            assert row["samples"] == r["samples"] and row["median"] == r["median"], sid
    return offset


def check_load(wgfuse, kind, total, slow):
    db = Database(kind)
    try:
        server = Server(wgfuse, db, "--rate", "off")
        crowd = SlowCrowd(server, slow)
        threads, acknowledged, latencies, errors, t0 = load(server, total)
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        crowd.close()
        assert not errors, f"{len(errors)} failed requests, e.g. {errors[:3]}"
        assert len(acknowledged) == total and len({sid for sid, _ in acknowledged}) == total
        rows = every_row_present(server, acknowledged)
        assert rows == sum(len(s["results"]) for _, s in acknowledged)
        lat = sorted(latencies)
        print(f"load ({kind}): {total} submissions ({rows} results) from {CLIENTS} clients beside {crowd.count} slow "
              f"connections ({crowd.reopened} reopened after the server cut them off) in {elapsed:.1f} s "
              f"({total / elapsed:.0f}/s); latency p50 {percentile(lat, 0.5) * 1e3:.2f} ms, "
              f"p99 {percentile(lat, 0.99) * 1e3:.2f} ms, max {lat[-1] * 1e3:.2f} ms")
        code, _, err = server.stop()
        assert code == 0, err
    finally:
        db.close()


def interrupted_load(wgfuse, db, total, fraction, sig):
    """Starts `total` submissions, sends `sig` once `fraction` of them are acknowledged, stops the
    clients; the acknowledged (id, submission) pairs and the server's (exit code, stdout, stderr)."""
    server = Server(wgfuse, db, "--rate", "off")
    stop = threading.Event()
    threads, acknowledged, _, _, _ = load(server, total, stop)
    while len(acknowledged) < total * fraction:
        time.sleep(0.01)
    server.proc.send_signal(sig)
    out, err = server.proc.communicate(timeout=60)
    stop.set()
    for t in threads:
        t.join()
    assert 0 < len(acknowledged) < total, len(acknowledged)
    return list(acknowledged), (server.proc.returncode, out, err)


def check_restart_keeps(wgfuse, db, acknowledged):
    restarted = Server(wgfuse, db, "--rate", "off")
    stored = every_row_present(restarted, acknowledged)
    code, _, err = restarted.stop()
    assert code == 0, err
    return stored


def check_sigkill(wgfuse, kind, total):
    db = Database(kind)
    try:
        acknowledged, _ = interrupted_load(wgfuse, db, total, 1 / 3, signal.SIGKILL)
        stored = check_restart_keeps(wgfuse, db, acknowledged)
        print(f"sigkill ({kind}): killed after {len(acknowledged)} of {total} acknowledged; after restart all "
              f"{len(acknowledged)} are there ({stored} results stored)")
    finally:
        db.close()


def check_sigterm(wgfuse, kind, total):
    db = Database(kind)
    try:
        acknowledged, (code, out, err) = interrupted_load(wgfuse, db, total, 1 / 4, signal.SIGTERM)
        assert code == 0 and "stopped" in out, f"exit {code}: {out} {err}"
        check_restart_keeps(wgfuse, db, acknowledged)
        print(f"sigterm ({kind}): exit 0 with {len(acknowledged)} acknowledged, all stored after restart")
    finally:
        db.close()


def run(wgfuse, kind):
    total = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    check_load(wgfuse, kind, total, int(sys.argv[4]) if len(sys.argv) > 4 else 200)
    check_sigkill(wgfuse, kind, min(total, 3000))
    check_sigterm(wgfuse, kind, min(total, 2000))


if __name__ == "__main__":
    sys.exit(main_with_db(run, sys.argv))
