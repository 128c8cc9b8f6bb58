"""Fault and attack suite for `wgfuse serve` (issue 22), against a real server on SQLite or PostgreSQL.
Each case asserts the answer, then that the server still answers and a valid submission still lands:
bytes that are not UTF-8 anywhere, deep nesting, oversized bodies (chunked and fixed-length) and
heads, idle and slow connections while a normal client must be answered within 1 s, pipelining,
SIGTERM with clients hanging on, the small things (media type case, offset and counter ranges, log
forging, CSV formulas, bidi names), the plausibility flags, and workload files crafted against the
playground's loader.
Usage: test_attacks.py WGFUSE sqlite|postgres"""
import copy
import http.client
import json
import os
import random
import signal
import socket
import sys
import threading
import time
from urllib.parse import quote

from serve_support import Database, Server, main_with_db, submission

# Short deadlines so that the slow-client cases take seconds (the defaults are 10 s and 30 s).
TIMEOUTS = ["--head-timeout", "2", "--body-timeout", "3"]


def raw(server, data, read=True, source="127.0.0.1", timeout=10):
    """Sends `data` on a fresh connection; everything the server answers until it closes."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout, source_address=(source, 0))
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may refuse before the whole request is sent
        if not read:
            return b""
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def status_of(reply):
    assert reply.startswith(b"HTTP/1.1 "), reply[:200]
    return int(reply[9:12])


def still_serving(server, rng, source="127.0.0.1"):
    """The server answers, and a valid submission lands."""
    status, _, body = server.post(submission(rng, n_results=1), source=source)
    assert status == 201, (status, body)
    reply = json.loads(body)
    assert reply["flagged"] == 0, reply
    return reply["id"]


def rss_mb(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def post_raw(body, content_type="application/json", path="/api/results"):
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n").encode("latin-1") + body


def check_bad_bytes(server, rng):
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH", "GET"):
        for path in ("/%ff", "/%c3%28", "/api/results/%ed%a0%80"):
            reply = raw(server, f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .encode())
            assert status_of(reply) == 400 and b"path: not UTF-8" in reply, (method, path, reply[:300])
    status, _, body = server.request("GET", "/api/results?device=%ff%fe")
    assert status == 400 and b"query parameter device: not UTF-8" in body, (status, body)
    status, _, body = server.request("GET", "/api/results?%ff=1")
    assert status == 400, (status, body)
    reply = raw(server, post_raw(b"{}", content_type="application/json\xff"))
    assert status_of(reply) == 400 and b"Content-Type: not UTF-8" in reply, reply[:300]
    good = json.dumps(submission(rng, n_results=1)).encode()
    bad = good.replace(b'"os": "Linux x86_64"', b'"os": "Linux \xff\xfe"')
    assert bad != good
    status, _, body = server.post(bad)
    assert status == 400 and b"body: malformed JSON" in body, (status, body)
    status, _, body = server.post(good.replace(b'"compared": "', b'"compared": "\xed\xa0\x80'))
    assert status == 400 and b"body: malformed JSON" in body, (status, body)
    still_serving(server, rng)


def check_depth(server, rng):
    good = submission(rng, n_results=1)
    for depth in (75000, 9):
        s = json.dumps(good)
        deep = "[" * depth + "]" * depth
        s = s.replace('"compared":', f'"extra": {deep}, "compared":', 1)
        status, _, body = server.post(s)
        assert status == 400 and b"nested deeper than 8 levels" in body, (depth, status, body[:300])
    still_serving(server, rng)


def check_body_limits(server, rng):
    before = rss_mb(server)
    # Fixed-length over the limit: refused as soon as the head is in, before the body is read.
    reply = raw(server, post_raw(b"")[:-len(b"Content-Length: 0\r\nConnection: close\r\n\r\n")] +
                b"Content-Length: 2097152\r\n\r\n")
    assert status_of(reply) == 413 and b"larger than the limit of 1048576 bytes" in reply, reply[:300]
    # Chunked over the limit, in big and in tiny chunks: cut off once the limit is passed (what
    # the client sent beyond it is drained, not read into memory).
    for chunk in (64 << 10, 7):
        head = b"POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        piece = b"%x\r\n" % chunk + b"y" * chunk + b"\r\n"
        reply = raw(server, head + piece * ((5 << 18) // chunk))
        assert status_of(reply) == 413 and b"larger than the limit" in reply, (chunk, reply[:300])
    # A body on a path that takes none is never read.
    reply = raw(server, b"POST /anything HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                b"10000\r\n" + b"z" * 0x10000 + b"\r\n")
    assert status_of(reply) == 405, reply[:300]
    # Eight 128 MiB chunked uploads at once: each cut off at the limit, memory stays small.
    def upload():
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            s.sendall(b"POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n")
            block = b"100000\r\n" + b"q" * 0x100000 + b"\r\n"
            for _ in range(128):
                s.sendall(block)
        except OSError:
            pass  # cut off: what should happen
    threads = [threading.Thread(target=upload) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "an upload was neither read nor cut off"
    after = rss_mb(server)
    print(f"body limits: server RSS {before:.0f} MB before, {after:.0f} MB after 8 x 128 MiB chunked uploads")
    assert after < 256, after
    still_serving(server, rng)


def check_head_limits(server, rng):
    many = "".join(f"X-H{k}: v\r\n" for k in range(10000))
    reply = raw(server, f"GET /api/results HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode())
    assert status_of(reply) == 431, reply[:300]
    reply = raw(server, b"GET /api/results HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (40 << 10) + b"\r\n\r\n")
    assert status_of(reply) == 431, reply[:300]
    reply = raw(server, b"GET /" + b"a" * (64 << 10) + b" HTTP/1.1\r\n\r\n")
    assert status_of(reply) in (414, 431), reply[:300]
    still_serving(server, rng)


def timed_request(server, source, method="GET", path="/api/results?limit=5", body=None):
    t0 = time.perf_counter()
    if method == "POST":
        status, _, raw_body = server.post(body, source=source, timeout=5)
    else:
        status, _, raw_body = server.request(method, path, source=source, timeout=5)
    return status, time.perf_counter() - t0, raw_body


def check_slow_clients(server, rng):
    """200 idle connections and 16 slow bodies (a byte a second), from one address and from many:
    a normal client is answered within 1 s throughout; the slow bodies are cut off by the deadline."""
    for spread in (False, True):
        held = []
        try:
            for k in range(200):
                src = f"127.0.1.{k + 1}" if spread else "127.0.0.1"
                try:
                    held.append(socket.create_connection(("127.0.0.1", server.port), timeout=5,
                                                         source_address=(src, 0)))
                except OSError:
                    pass
            slow = []
            for k in range(16):
                src = f"127.0.2.{k + 1}" if spread else "127.0.0.1"
                s = socket.create_connection(("127.0.0.1", server.port), timeout=5, source_address=(src, 0))
                s.sendall(b"POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 100000\r\n\r\n{")
                slow.append(s)
            # Headers trickled too: a byte at a time.
            trickle = socket.create_connection(("127.0.0.1", server.port), timeout=5,
                                               source_address=("127.0.3.1" if spread else "127.0.0.1", 0))
            worst = 0.0
            t_end = time.perf_counter() + 4
            n = 0
            while time.perf_counter() < t_end:
                for s in slow:
                    try:
                        s.send(b" ")
                    except OSError:
                        pass
                try:
                    trickle.send(b"GET /"[n % 5:n % 5 + 1])
                except OSError:
                    pass
                status, took, body = timed_request(server, "127.0.0.2")
                assert status == 200, (status, body[:200])
                status, took2, body = timed_request(server, "127.0.0.2", "POST", body=submission(rng, n_results=1))
                assert status == 201, (status, body[:200])
                worst = max(worst, took, took2)
                n += 1
                time.sleep(0.3)
            assert worst < 1.0, f"a normal request took {worst:.2f} s beside 200 idle and 16 slow connections"
            # The slow bodies were cut off by the body deadline (3 s) with 408, or (from one address,
            # beyond its connection cap) refused at once with 503.
            cut = 0
            for s in slow:
                s.settimeout(5)
                try:
                    reply = s.recv(65536)
                    cut += reply.startswith(b"HTTP/1.1 408") or (not spread and reply.startswith(b"HTTP/1.1 503"))
                except OSError:
                    pass
            assert cut == 16, f"{cut} of 16 slow bodies cut off with 408 (or refused with 503)"
            print(f"slow clients ({'many addresses' if spread else 'one address'}): worst normal request "
                  f"{worst * 1e3:.0f} ms over {n} rounds; 16 slow bodies cut off with 408")
            for s in slow + [trickle]:
                s.close()
        finally:
            for s in held:
                s.close()
    still_serving(server, rng)


def refused_already(sockets):
    """How many of these connections the server has answered already (a refusal), without waiting."""
    n = 0
    for s in sockets:
        try:
            n += s.recv(16, socket.MSG_DONTWAIT | socket.MSG_PEEK).startswith(b"HTTP/1.1 503")
        except OSError:
            pass
    return n


def check_connection_caps(server, rng):
    # 40 idle connections from one address, then a request from it: refused once the server has
    # accepted the 40 (on a loaded machine that can take a while: until then a request is still under
    # the cap and served). A CI run once saw 5 s of probes served: up to 3 tries with fresh connections,
    # each saying what the server did with the held ones.
    for attempt in range(3):
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(40)]
        try:
            deadline = time.monotonic() + 5
            while True:
                time.sleep(0.3)
                reply = raw(server, b"GET /api/results HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if status_of(reply) == 503 or time.monotonic() > deadline:
                    break
            if status_of(reply) == 503:
                assert b"too many connections from 127.0.0.1" in reply, reply[:300]
                still_serving(server, rng, source="127.0.0.2")
                break
            print(f"connection caps, try {attempt + 1}: probes served for 5 s while 40 connections were held; "
                  f"the server had refused {refused_already(held)} of them")
        finally:
            for s in held:
                s.close()
        time.sleep(1)
    assert status_of(reply) == 503, reply[:300]
    time.sleep(0.3)
    still_serving(server, rng)


def check_pipelining(server, rng):
    a, b = submission(rng, n_results=1), submission(rng, n_results=2)
    reqs = b""
    for s in (a, b):
        body = json.dumps(s).encode()
        reqs += (b"POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body)) + body
    reqs += b"GET /kernels/index.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reply = raw(server, reqs)
    assert reply.count(b"HTTP/1.1 201") == 2 and reply.count(b"HTTP/1.1 200") == 1, reply[:600]
    assert reply.index(b"HTTP/1.1 200") > reply.rindex(b"HTTP/1.1 201")
    ids = [json.loads(part.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1")[0])["id"]
           for part in reply.split(b"HTTP/1.1 201")[1:]]
    for sid, s in zip(ids, (a, b)):
        rows = [r for r in server.get_json("/api/results?limit=1000")["rows"] if r["submission_id"] == sid]
        assert len(rows) == len(s["results"]), (sid, rows)


def check_small_things(server, rng):
    s = submission(rng, n_results=1)
    status, _, body = server.request("POST", "/api/results", json.dumps(s), {"Content-Type": "Application/JSON; Charset=UTF-8"})
    assert status == 201, (status, body)
    for q in ("offset=9223372036854775808", "offset=99999999999999999999", "limit=-0x1"):
        status, _, body = server.request("GET", "/api/results?" + q)
        assert status == 400, (q, status, body)
    big = copy.deepcopy(s)
    big["results"][0]["submits"] = 2 ** 63
    status, _, body = server.post(big)
    assert status == 400 and b"results[0].submits: must be at most 9223372036854775807" in body, (status, body)
    # Names: bidi controls removed, a 256-character name of 2-byte characters accepted, 257 refused.
    s = submission(rng, n_results=1)
    s["adapter"]["device"] = "Radeon\u202eXT\u2066 9000"
    s["results"][0]["name"] = "é" * 256
    status, _, body = server.post(s)
    assert status == 201, (status, body)
    sid = json.loads(body)["id"]
    rows = [r for r in server.get_json("/api/results?limit=1000")["rows"] if r["submission_id"] == sid]
    assert rows[0]["device"] == "RadeonXT 9000" and rows[0]["name"] == "é" * 256, rows[0]["device"]
    # One submission's rows by the link the page gives after submitting.
    assert server.get_json(f"/api/results?submission={sid}")["rows"] == rows
    assert server.request("GET", "/api/results?submission=x")[0] == 400
    # A browser adapter without a device name gets vendor and architecture as its identity.
    s = submission(rng, n_results=1)
    s["adapter"].update(vendor="apple", architecture="metal-3", device="")
    status, _, body = server.post(s)
    sid = json.loads(body)["id"]
    assert server.get_json(f"/api/results?submission={sid}")["rows"][0]["device"] == "apple metal-3"
    s["results"][0]["name"] = "é" * 257
    status, _, body = server.post(s)
    assert status == 400 and b"longer than 256 characters (257)" in body, (status, body)
    # CSV: a formula is defused.
    s = submission(rng, n_results=1)
    s["adapter"]["device"] = '=HYPERLINK("http://evil","click")'
    assert server.post(s)[0] == 201
    status, _, body = server.request("GET", "/api/results?format=csv&limit=1000&device=" + quote(s["adapter"]["device"]))
    assert status == 200 and b"'=HYPERLINK" in body and b",=HYPERLINK" not in body and b',"=HYPERLINK' not in body, body


# The declarations every workload file needs, for the crafted files below.
WORKLOAD_DECLARATIONS = """fn sim_load(ind: u32) {}
fn sim_init(ind: u32, episode: u32) -> State { return State(); }
fn sim_step(t: u32, s: ptr<function, State>, ind: u32) {}
fn sim_fitness(s: State) -> f32 { return 0.0; }
fn sim_done(s: State) -> bool { return false; }
const SIM_TEAM_SPLITS_STEPS: bool = false;
"""
WORKLOAD_HEADER = '/// {"name": "crafted", "genome": {"length": 3}, "defaults": {"pop": 4, "steps": 3}}\n'


def post_workload(server, text, name="crafted.wgsl", content_type="text/plain"):
    body = text.encode() if isinstance(text, str) else text
    return server.request("POST", f"/api/sim/workload?name={quote(name)}", body=body,
                          headers={"Content-Type": content_type})


def check_workload_files(server, rng):
    """POST /api/sim/workload: bounded, its header's script never looked up, and crafted files that
    once crashed the server (std::regex's recursion overflowing a thread's stack) or held it for 30 s
    (a pattern rescanning the file from each unclosed struct) answered at once."""
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "sim")
    with open(os.path.join(examples, "pendulum.wgsl")) as f:
        pendulum = f.read()
    status, headers, body = post_workload(server, pendulum, "pendulum.wgsl")
    assert status == 200, (status, body[:300])
    w = json.loads(body)
    assert w["name"] == "pendulum" and w["origin"] == "pendulum.wgsl" and w["slot_bytes"] == 24, w.keys()
    assert pendulum in w["modules"]["solo"]["source"] and pendulum in w["modules"]["team"]["source"]
    # The script the header names is neither looked up nor run, wherever it points.
    for script in ("/etc/passwd", "../../no/such/script.py"):
        status, _, body = post_workload(server, pendulum.replace("pendulum_reference.py", script), "pendulum.wgsl")
        assert status == 200, (script, status, body[:300])
    # Refusals: the loader's reason, the media type, the name, the size.
    status, _, body = post_workload(server, WORKLOAD_HEADER + "struct State { a: f32 }\n")
    assert status == 422 and b"crafted.wgsl: no declaration of `fn sim_load(ind: u32)`" in body, (status, body)
    status, _, body = post_workload(server, pendulum, content_type="application/json")
    assert status == 415 and b"must be text/plain" in body, (status, body)
    for name in ("../x.wgsl", "x.txt", "a/b.wgsl", "x" * 80 + ".wgsl"):
        status, _, body = post_workload(server, pendulum, name)
        assert status == 400 and b"name: must be a file name" in body, (name, status, body)
    status, _, body = post_workload(server, "/" * (64 * 1024 + 1))
    assert status == 413 and b"larger than the limit of 65536 bytes" in body, (status, body[:300])
    status, _, body = post_workload(server, b"/// {\xff}")
    assert status == 400 and b"not UTF-8" in body, (status, body)
    # Crafted files, each under the size limit: answered (expanded or refused) within 2 s, the server unhurt.
    n = 60000
    files = WORKLOAD_HEADER + WORKLOAD_DECLARATIONS
    crafted = {
        "a long array type": files + "struct State { a: array<f32" + " " * n + ", 4> }\n",
        "a long member": files + "struct State { " + "a" * n + " }\n",
        "a long number": files + "struct State { a: f32 }\nconst MLP_IN: u32 = " + "1" * n + ";\n",
        "unclosed structs": files + "struct State {" * 4000 + "\n",
        "deeply nested arrays": files + "struct State { a: " + "array<" * 4000 + "f32" + ", 4>" * 4000 + " }\n",
        "an unclosed JSON header": "/// " + "[" * n + "\n",
        "a deeply nested JSON header": "/// " + "[" * (n // 2) + "]" * (n // 2) + "\n",
    }
    for what, text in crafted.items():
        assert len(text.encode()) <= 64 * 1024, what
        t0 = time.perf_counter()
        status, _, body = post_workload(server, text)
        took = time.perf_counter() - t0
        # (some are valid files: `array<f32    , 4>` is an array)
        assert status == 200 or (status == 422 and body.startswith(b'{"error":"crafted.wgsl')), (what, status,
                                                                                              body[:300])
        assert took < 2, f"{what}: answered in {took:.1f} s"
        assert server.proc.poll() is None, f"{what}: the server died"
    still_serving(server, rng)


def check_access_log(wgfuse, db, rng):
    server = Server(wgfuse, db, "--rate", "off", "--access-log")
    try:
        server.request("GET", "/x%0a10.0.0.1%20GET%20/admin%20200")
        server.request("GET", "/%1b[31mred")
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("127.0.0.1 GET /x") or "red" in line]
    assert len(lines) == 2, err
    assert any("/x\\x0a10.0.0.1 GET /admin 200 4" in line for line in lines), lines
    assert "\x1b" not in err and any("\\x1b[31mred" in line for line in lines), lines
    assert not any(line.startswith("10.0.0.1") for line in err.splitlines()), err


def check_plausibility(server, rng):
    """Every lie is stored flagged and stays out of the summary; the plausible ones are not flagged."""
    honest = submission(rng, n_results=1, suite="chain")
    honest["results"][0].update(name="fused k=8", bandwidth_gbs=8.0, bound_gbs=10.0)
    sizes = honest["results"][0]["sizes"]
    for _ in range(3):
        status, _, body = server.post(honest)
        assert status == 201 and json.loads(body)["flagged"] == 0, (status, body)

    def lie(mutate):
        s = copy.deepcopy(honest)
        mutate(s["results"][0])
        return s

    def set_samples(r, v):
        r.update(samples=v, min=min(v), max=max(v), median=sorted(v)[len(v) // 2])

    lies = {
        "bandwidth_gbs": lie(lambda r: r.update(bandwidth_gbs=1e12, bound_gbs=1.0)),
        "samples": lie(lambda r: (r.update(unit="tok/s"), set_samples(r, [1e15, 1.1e15, 1.2e15]))),
        "median": lie(lambda r: r.update(min=r["min"] / 2, median=r["min"] / 2)),
        "equivalence": lie(lambda r: r["equivalence"].update(max_abs_diff=0.5)),
        "sizes.elements": lie(lambda r: r["sizes"].update(elements=-1)),
        "kernel_version": lie(lambda r: r.update(kernel_version="0123456789abcdef")),
    }
    for field, s in lies.items():
        status, _, body = server.post(s)
        assert status == 201 and json.loads(body)["flagged"] == 1, (field, status, body)
    flagged = server.get_json("/api/results?flagged=yes&limit=1000")["rows"]
    assert len(flagged) == len(lies), [r["flags"] for r in flagged]
    for r, field in zip(flagged, lies):
        assert any(f.startswith(field) for f in r["flags"]), (field, r["flags"])
    plausible = server.get_json("/api/results?flagged=no&limit=1000")["rows"]
    assert plausible and all(r["flags"] == [] for r in plausible)
    # The lies are out of the summary: the group of the honest rows holds exactly them.
    summary = server.get_json("/api/summary?by=vendor&suite=chain&name=" + quote("fused k=8") +
                              "&vendor=" + quote(honest["adapter"]["vendor"]))
    mine = [g for g in summary["groups"] if g["sizes"] == sizes]
    assert len(mine) == 1 and mine[0]["count"] == 3, summary
    assert mine[0]["median"] == honest["results"][0]["median"], (mine, honest["results"][0]["median"])
    assert all(g["key"] == honest["adapter"]["vendor"] and g["name"] == "fused k=8" for g in summary["groups"])


def check_sigterm(wgfuse, db, rng):
    """SIGTERM exits 0 within the stop grace (2 s) and a margin, whatever the clients do."""
    server = Server(wgfuse, db, "--rate", "off", *TIMEOUTS)
    held = []
    for k in range(20):
        held.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
    slow = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    slow.sendall(b"POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9999\r\n\r\n")
    half = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    half.sendall(b"GET /api/res")
    time.sleep(0.3)
    t0 = time.perf_counter()
    code, out, err = server.stop(timeout=20)
    took = time.perf_counter() - t0
    for s in held + [slow, half]:
        s.close()
    assert code == 0 and "stopped" in out, (code, out, err)
    print(f"sigterm with 22 clients hanging on: exit 0 after {took:.2f} s")
    assert took < 5, took


def run(wgfuse, kind):
    rng = random.Random(22)
    db = Database(kind)
    try:
        server = Server(wgfuse, db, "--rate", "off", *TIMEOUTS)
        try:
            for check in (check_bad_bytes, check_depth, check_body_limits, check_head_limits, check_connection_caps,
                          check_pipelining, check_small_things, check_slow_clients, check_plausibility,
                          check_workload_files):
                t0 = time.perf_counter()
                check(server, rng)
                assert server.proc.poll() is None, f"{check.__name__}: the server died"
                print(f"{check.__name__}: passed in {time.perf_counter() - t0:.1f} s")
        finally:
            code, _, err = server.stop()
            assert code == 0, f"exit {code}: {err}"
        assert "failed" not in err, err  # no handler threw
        check_access_log(wgfuse, db, rng)
        check_sigterm(wgfuse, db, rng)
    finally:
        db.close()


if __name__ == "__main__":
    sys.exit(main_with_db(run, sys.argv))
