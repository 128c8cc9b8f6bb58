"""The results API of `wgfuse serve` against a real server (SQLite or PostgreSQL): every bad input
answered with a 4xx that names the field, stored strings verbatim (SQL injection is data), the
static files without traversal, the kernels as the binary embeds them, and the rate limit.
Usage: test_api.py WGFUSE sqlite|postgres BUILD_DIR"""
import copy
import csv
import hashlib
import io
import json
import os
import random
import sys

from serve_support import Database, Server, main_with_db, submission

BUILD_DIR = sys.argv[3] if len(sys.argv) > 3 else "."


def expect_error(server, body, status, field, **kw):
    got, headers, raw = server.post(body, **kw)
    assert got == status, f"expected {status} for {field}, got {got}: {raw[:300]!r}"
    reason = json.loads(raw)["error"]
    assert field in reason, f"expected the reason to name {field!r}: {reason!r}"
    return reason


def check_rejections(server, rng):
    good = submission(rng, n_results=3)
    cases = []

    def case(field, mutate, status=400):
        s = copy.deepcopy(good)
        mutate(s)
        cases.append((field, s, status))

    case("schema_version", lambda s: s.update(schema_version=2))
    case("source", lambda s: s.update(source="robot"))
    case("adapter.vendor", lambda s: s["adapter"].pop("vendor"))
    case("adapter.backend", lambda s: s["adapter"].update(backend=7))
    case("adapter.features[0]", lambda s: s["adapter"].update(features=[{"x": 1}]))
    case("browser", lambda s: s.update(browser=None))
    case("os", lambda s: s.update(os="x" * 257))
    case("results", lambda s: s.update(results=[]))
    case("results", lambda s: s.update(results=s["results"] * 100))  # 300 > 256
    case("results[1].suite", lambda s: s["results"][1].update(suite="mining"))
    case("results[2].median", lambda s: s["results"][2].update(median=s["results"][2]["min"] - 1))
    case("results[0].median", lambda s: s["results"][0].update(median="12"))
    case("results[0].std", lambda s: s["results"][0].update(std=-0.5))
    case("results[1].samples", lambda s: s["results"][1].update(samples=[]))
    case("results[1].samples[0]", lambda s: s["results"][1].update(samples=[s["results"][1]["max"] + 3]))
    case("results[0].speedup", lambda s: s["results"][0].update(speedup=20000.0, baseline="naive"))
    case("results[0].speedup", lambda s: s["results"][0].update(speedup=0.001, baseline="naive"))
    case("results[2].equivalence", lambda s: s["results"][2].pop("equivalence"))
    case("results[2].equivalence.passed", lambda s: s["results"][2]["equivalence"].update(passed=False))
    case("results[0].dispatches", lambda s: s["results"][0].update(dispatches=-1))
    case("results[0].dispatches", lambda s: s["results"][0].update(dispatches=2.5))
    case("results[0].kernel_version", lambda s: s["results"][0].update(kernel_version="'; DROP TABLE x"))
    case("results[0].sizes.elements", lambda s: s["results"][0]["sizes"].update(elements="big"))
    case("results[0].unit", lambda s: s["results"][0].update(unit="parsecs"))
    for field, body, status in cases:
        expect_error(server, body, status, field)

    # Non-finite numbers: JSON has none, and a number beyond double range is malformed.
    raw = json.dumps(good).replace(json.dumps(good["results"][0]["std"]), "1e999", 1)
    expect_error(server, raw, 400, "body: malformed JSON")
    expect_error(server, json.dumps(good).replace("true", "NaN", 1), 400, "body: malformed JSON")
    expect_error(server, "{\"schema_version\": 1,", 400, "body")
    expect_error(server, "[1, 2]", 400, "body")
    status, _, raw = server.request("POST", "/api/results", json.dumps(good), {"Content-Type": "text/plain"})
    assert status == 415 and b"Content-Type" in raw, (status, raw)
    huge = copy.deepcopy(good)
    huge["client_version"] = "x" * (1 << 20)
    expect_error(server, huge, 413, "body")
    # Nothing of the above was stored.
    assert server.get_json("/api/results")["total"] == 0


def check_round_trip(server, rng):
    # SQL injection strings are data: stored and returned verbatim, harmless to the tables.
    evil = ["'; DROP TABLE results; --", "x' OR '1'='1", "\"; DELETE FROM submissions; --", "Robert'); --",
            "naïve ünïcode ✓ 日本"]
    ids = []
    sent = []
    for k, text in enumerate(evil):
        s = submission(rng, n_results=1 + k % 3, source="native" if k % 2 else "browser")
        s["adapter"]["device"] = text
        s["results"][0]["name"] = text
        status, _, raw = server.post(s)
        assert status == 201, (status, raw)
        reply = json.loads(raw)
        assert reply["accepted"] == len(s["results"])
        ids.append(reply["id"])
        sent.append(s)
    assert len(set(ids)) == len(ids)
    total = sum(len(s["results"]) for s in sent)
    page = server.get_json("/api/results?limit=1000")
    assert page["total"] == total and len(page["rows"]) == total, page["total"]
    by_submission = {}
    for row in page["rows"]:
        by_submission.setdefault(row["submission_id"], []).append(row)
    for sid, s in zip(ids, sent):
        rows = by_submission[sid]
        assert len(rows) == len(s["results"])
        for row, r in zip(rows, s["results"]):
            assert row["device"] == s["adapter"]["device"]
            assert row["source"] == s["source"]
            assert row["browser"] == (s["browser"]["name"] if s["browser"] else None)
            for key in ("suite", "name", "kernel_version", "sizes", "unit", "median", "min", "max", "std", "samples",
                        "dispatches", "submits", "speedup", "baseline", "bandwidth_gbs", "bound_gbs", "equivalence"):
                assert row[key] == r[key], (key, row[key], r[key])
            assert row["n_samples"] == len(r["samples"])
    # Filters are bound values too: the injection string matches only its own rows.
    from urllib.parse import quote
    rows = server.get_json("/api/results?device=" + quote(evil[1]))["rows"]
    assert len(rows) == len(sent[1]["results"]) and all(r["device"] == evil[1] for r in rows)
    assert server.get_json("/api/results?source=native")["total"] == sum(
        len(s["results"]) for s in sent if s["source"] == "native")
    # Pagination: pages in id order, together every row once.
    seen = []
    for offset in range(0, total, 2):
        seen += [r["id"] for r in server.get_json(f"/api/results?limit=2&offset={offset}")["rows"]]
    assert seen == sorted(r["id"] for r in page["rows"])
    # CSV: a header and the same rows, JSON columns as JSON strings.
    status, headers, raw = server.request("GET", "/api/results?format=csv&limit=1000")
    assert status == 200 and headers["Content-Type"].startswith("text/csv"), (status, headers)
    table = list(csv.DictReader(io.StringIO(raw.decode())))
    assert len(table) == total
    assert [json.loads(t["samples"]) for t in table] == [r["samples"] for r in page["rows"]]
    assert [t["device"] for t in table] == [r["device"] for r in page["rows"]]
    # Summary: median of medians per group (a problem size is a group of its own), with counts.
    assert all(r["flags"] == [] for r in page["rows"]), [r["flags"] for r in page["rows"] if r["flags"]]
    summary = server.get_json("/api/summary?by=vendor")
    groups = {}
    for r in page["rows"]:
        groups.setdefault((r["vendor"], r["suite"], r["name"], json.dumps(r["sizes"], sort_keys=True)),
                          []).append(r["median"])
    assert len(summary["groups"]) == len(groups)
    for g in summary["groups"]:
        medians = sorted(groups[(g["key"], g["suite"], g["name"], json.dumps(g["sizes"], sort_keys=True))])
        n = len(medians)
        want = medians[n // 2] if n % 2 else 0.5 * (medians[n // 2 - 1] + medians[n // 2])
        assert g["count"] == n and abs(g["median"] - want) <= 1e-12 * abs(want), (g, medians)
    for bad in ("/api/results?limit=0", "/api/results?limit=5000", "/api/results?offset=-1",
                "/api/results?format=xml", "/api/results?vendr=x", "/api/summary?by=price"):
        status, _, raw = server.request("GET", bad)
        assert status == 400 and "error" in json.loads(raw), (bad, status, raw)


# A page of the test's own (web/ belongs to the page's authors): each kind of file, and what it is
# served as.
PAGE = {
    "index.html": ("<!doctype html><title>wgfuse test</title>", "text/html; charset=utf-8", "no-cache"),
    "results.html": ("<!doctype html><title>results</title>", "text/html; charset=utf-8", "no-cache"),
    "app/main.js": ("export const answer = 41;", "text/javascript; charset=utf-8", "max-age=3600"),
    "style.css": ("body { margin: 0 }", "text/css; charset=utf-8", "max-age=3600"),
    "data/sizes.json": ('{"n": 7}', "application/json", "max-age=3600"),
    "logo.svg": ("<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml", "max-age=3600"),
}


def write_page(root):
    for path, (text, _, _) in PAGE.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)


def check_static_and_kernels(server):
    for url, path in [("/", "index.html"), ("/results", "results.html")] + [("/" + p, p) for p in PAGE]:
        status, headers, raw = server.request("GET", url)
        text, content_type, cache = PAGE[path]
        assert status == 200 and raw.decode() == text, (url, status, raw)
        assert headers["Content-Type"] == content_type and headers["Cache-Control"] == cache, (url, headers)
    for path in ("/../CMakeLists.txt", "/%2e%2e/CMakeLists.txt", "/app/%2E%2E/%2e%2e/CMakeLists.txt",
                 "/..%2fCMakeLists.txt", "//etc/passwd", "/.git/config", "/app/..\\..\\CMakeLists.txt"):
        status, _, raw = server.request("GET", path)
        assert status in (400, 404), (path, status)
        assert b"cmake_minimum_required" not in raw and b"root:" not in raw, path
    status, _, _ = server.request("GET", "/no-such-file.js")
    assert status == 404

    status, headers, _ = server.request("GET", "/kernels/index.json")
    assert headers["Cache-Control"] == "no-cache" and headers["Content-Type"] == "application/json", headers
    index = server.get_json("/kernels/index.json")
    listing = ""
    expanded = os.path.join(BUILD_DIR, "generated", "kernels")
    # The families are the source tree's kernels/*.wgsl (the build directory may hold stale files).
    sources = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels")
    names = sorted(f[:-5] for f in os.listdir(sources) if f.endswith(".wgsl"))
    assert [k["name"] for k in index["kernels"]] == names
    for k in index["kernels"]:
        status, headers, text = server.request("GET", f"/kernels/{k['name']}.wgsl")
        assert status == 200 and headers["Content-Type"] == "text/plain; charset=utf-8"
        assert headers["Cache-Control"] == "no-cache"
        with open(os.path.join(expanded, k["name"] + ".wgsl"), "rb") as f:
            assert text == f.read(), k["name"]  # the same text the build wrote for the embedded table
        digest = hashlib.sha256(text).hexdigest()
        assert k["sha256"] == digest == headers["X-Kernel-SHA256"] and k["bytes"] == len(text)
        listing += f"{k['name']}\n{digest}\n"
    assert index["version"] == hashlib.sha256(listing.encode()).hexdigest()[:16]
    status, _, _ = server.request("GET", "/kernels/nope.wgsl")
    assert status == 404


def check_rate_limit(wgfuse, db, rng):
    write_page(f"{db.dir}/web")
    server = Server(wgfuse, db, "--rate", "20/min", "--read-rate", "40/min", "--web", f"{db.dir}/web")
    try:
        s = submission(rng, n_results=1)
        answers = [server.post(s)[0] for _ in range(30)]
        assert answers[:20] == [201] * 20 and set(answers[20:]) == {429}, answers
        status, headers, raw = server.post(s)
        assert status == 429 and int(headers["Retry-After"]) >= 1 and b"rate limit" in raw
        # Another client (another loopback address) is still served.
        status, _, raw = server.post(s, source="127.0.0.2")
        assert status == 201, (status, raw)
        status, _, _ = server.request("GET", "/", source="127.0.0.1")  # the page is not limited
        assert status == 200
        # Queries draw on their own, larger bucket: the spent submissions do not stop them, and
        # they stop at --read-rate.
        reads = [server.request("GET", "/api/results?limit=1")[0] for _ in range(45)]
        assert reads[:40] == [200] * 40 and set(reads[40:]) == {429}, reads
    finally:
        code, _, err = server.stop()
        assert code == 0, err


def run(wgfuse, kind):
    rng = random.Random(11)
    db = Database(kind)
    try:
        write_page(f"{db.dir}/web")
        server = Server(wgfuse, db, "--rate", "off", "--web", f"{db.dir}/web")
        try:
            check_rejections(server, rng)
            check_static_and_kernels(server)
            check_round_trip(server, rng)
        finally:
            code, _, err = server.stop()
            assert code == 0, f"exit {code}: {err}"
        db2 = Database(kind)
        try:
            check_rate_limit(wgfuse, db2, rng)
        finally:
            db2.close()
    finally:
        db.close()


if __name__ == "__main__":
    sys.exit(main_with_db(run, sys.argv))
