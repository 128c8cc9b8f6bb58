"""Load and faults for `wgfuse serve`: N submissions from 16 concurrent clients, nothing lost, p50/p99
latency printed; then the same load killed with SIGKILL midway, the server restarted on the same
database, and every acknowledged submission found with its rows; and SIGTERM during load drains the
requests in flight and exits 0.
Usage: test_load.py WGFUSE sqlite|postgres [SUBMISSIONS]"""
import http.client
import json
import random
import signal
import sys
import threading
import time

from serve_support import Database, Server, main_with_db, percentile, submission

CLIENTS = 16


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


def check_load(wgfuse, kind, total):
    db = Database(kind)
    try:
        server = Server(wgfuse, db, "--rate", "off")
        threads, acknowledged, latencies, errors, t0 = load(server, total)
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        assert not errors, f"{len(errors)} failed requests, e.g. {errors[:3]}"
        assert len(acknowledged) == total and len({sid for sid, _ in acknowledged}) == total
        rows = every_row_present(server, acknowledged)
        assert rows == sum(len(s["results"]) for _, s in acknowledged)
        lat = sorted(latencies)
        print(f"load ({kind}): {total} submissions ({rows} results) from {CLIENTS} clients in {elapsed:.1f} s "
              f"({total / elapsed:.0f}/s); latency p50 {percentile(lat, 0.5) * 1e3:.2f} ms, "
              f"p99 {percentile(lat, 0.99) * 1e3:.2f} ms, max {lat[-1] * 1e3:.2f} ms")
        code, _, err = server.stop()
        assert code == 0, err
    finally:
        db.close()


def check_sigkill(wgfuse, kind, total):
    db = Database(kind)
    try:
        server = Server(wgfuse, db, "--rate", "off")
        stop = threading.Event()
        threads, acknowledged, _, _, _ = load(server, total, stop)
        while len(acknowledged) < total // 3:
            time.sleep(0.01)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
        stop.set()
        for t in threads:
            t.join()
        killed_at = len(acknowledged)
        assert 0 < killed_at < total, killed_at
        restarted = Server(wgfuse, db, "--rate", "off")
        stored = every_row_present(restarted, list(acknowledged))
        print(f"sigkill ({kind}): killed after {killed_at} of {total} acknowledged; after restart all "
              f"{killed_at} are there ({stored} results stored)")
        code, _, err = restarted.stop()
        assert code == 0, err
    finally:
        db.close()


def check_sigterm(wgfuse, kind, total):
    db = Database(kind)
    try:
        server = Server(wgfuse, db, "--rate", "off")
        stop = threading.Event()
        threads, acknowledged, _, errors, _ = load(server, total, stop)
        while len(acknowledged) < total // 4:
            time.sleep(0.01)
        code, out, err = server.stop(signal.SIGTERM)
        stop.set()
        for t in threads:
            t.join()
        assert code == 0 and "stopped" in out, f"exit {code}: {out} {err}"
        restarted = Server(wgfuse, db, "--rate", "off")
        every_row_present(restarted, list(acknowledged))
        print(f"sigterm ({kind}): exit 0 after {len(acknowledged)} acknowledged, all stored; "
              f"{len(errors)} requests refused after the stop")
        restarted.stop()
    finally:
        db.close()


def run(wgfuse, kind):
    total = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    check_load(wgfuse, kind, total)
    check_sigkill(wgfuse, kind, min(total, 3000))
    check_sigterm(wgfuse, kind, min(total, 2000))


if __name__ == "__main__":
    sys.exit(main_with_db(run, sys.argv))
