#!/usr/bin/env python3
"""Load on `wgfuse serve --model` or any OpenAI-compatible server (e.g. llama.cpp's llama-server).

For each concurrency C, C streamed chat completions start at once; prints per C the requests
answered, the aggregate and per-stream decode rates and the time to first token (p50, p99); with
--json FILE the same as JSON. Two aggregates: "served" counts every token from the start (the time
to first token, the prompts' prefill, included), "decode" counts the tokens after each stream's
first from the first stream's first token to the last stream's last one, with the share of that
span in which all C streams decoded together: near 100% (streams of equal length, begun together),
the decode aggregate compares with `wgfuse generate --parallel C`'s tok/s in all, which times steps
only. A stream's own rate (its tokens after the first over its first to last token) compares with
generate's tok/s per sequence at C up to the server's --parallel. Python's standard library only, so that it runs on the GPU machine,
which has no node (the official `openai` npm client is exercised by the ctest suite).

  python3 bench/serve_load.py --url http://127.0.0.1:8080/v1 [--concurrency 1,8,32]
          [--max-tokens 256] [--prompt TEXT] [--api-key KEY] [--json FILE] [--join-long WORDS]

--join-long WORDS: then a stream runs alone and, 0.2 s after it starts (give --max-tokens 1024 or
more), a request with a prompt of about WORDS words joins; prints the running stream's longest gap
between two tokens before the join and while the newcomer waits for its first token (its prefill).
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse


def request(url, method, path, body=None, api_key="none", timeout=3600):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
    conn.request(method, u.path.rstrip("/") + path, json.dumps(body) if body is not None else None, headers)
    return conn, conn.getresponse()


def one(args, model, t0, out):
    """One streamed request: time to first token, then tokens and the decode time after it."""
    body = {"model": model, "messages": [{"role": "user", "content": args.prompt}],
            "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    conn, resp = request(args.url, "POST", "/chat/completions", body, args.api_key)
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read(400).decode(errors='replace')}")
    first = last = None
    tokens = 0
    times = []
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        if chunk.get("timings"):  # wgfuse: from the request's arrival to its first token (text or not)
            out["server_first_token_ms"] = chunk["timings"].get("first_token_ms")
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
            out["prompt_tokens"] = chunk["usage"].get("prompt_tokens")
        if any((c.get("delta") or {}).get("content") for c in chunk.get("choices", [])):
            last = time.perf_counter()
            first = first or last
            times.append(last)
    conn.close()
    if first is None:
        raise RuntimeError("the stream carried no content")
    out.update(ttft_ms=(first - t0) * 1e3, decode_ms=(last - first) * 1e3, tokens=tokens, first=first, end=last,
               times=times)


def join_long(args, model):
    """A running stream, and a long prompt joining it: the running stream's longest token gaps."""
    running, joining = {}, {}
    a = threading.Thread(target=one, args=(args, model, time.perf_counter(), running))
    a.start()
    time.sleep(0.2)  # the running stream is decoding (a short prompt; give --max-tokens 1024 or more)
    long_args = argparse.Namespace(**{**vars(args), "max_tokens": 16,
                                      "prompt": " ".join(["lighthouse"] * args.join_long) + " Summarise."})
    t_join = time.perf_counter()
    one(long_args, model, t_join, joining)
    a.join()
    first_joined = t_join + joining["ttft_ms"] / 1e3
    times = running["times"]

    def longest_gap(lo, hi):
        ts = [t for t in times if lo <= t <= hi]
        return max((b - a) * 1e3 for a, b in zip(ts, ts[1:])) if len(ts) > 1 else float("nan")

    row = {"join_long_words": args.join_long, "joiner_prompt_tokens": joining.get("prompt_tokens"),
           "joiner_ttft_ms": joining["ttft_ms"],
           "running_gap_ms_before": longest_gap(times[0], t_join),
           "running_gap_ms_during_prefill": longest_gap(t_join, first_joined),
           "running_tokens_during_prefill": sum(t_join <= t <= first_joined for t in times)}
    print(f"join of a {args.join_long}-word prompt ({row['joiner_prompt_tokens']} tokens): its first token after "
          f"{row['joiner_ttft_ms']:.0f} ms; the "
          f"running stream's longest gap {row['running_gap_ms_before']:.1f} ms before, "
          f"{row['running_gap_ms_during_prefill']:.1f} ms meanwhile "
          f"({row['running_tokens_during_prefill']} tokens meanwhile)", flush=True)
    return row


def server_health(url):
    """GET /health beside the API's /v1 (wgfuse serve and llama-server have one); None without it."""
    u = urllib.parse.urlsplit(url)
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=10)
        conn.request("GET", "/health")
        resp = conn.getresponse()
        body = json.load(resp) if resp.status == 200 else None
        conn.close()
        return body
    except (OSError, ValueError):
        return None


def percentile(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] if sorted_values else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8080/v1")
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--prompt", default="Write a long, detailed story about a lighthouse keeper and a storm.")
    p.add_argument("--api-key", default=os.environ.get("WGFUSE_API_KEY", "none"))
    p.add_argument("--model")
    p.add_argument("--json")
    p.add_argument("--join-long", type=int, default=0)
    args = p.parse_args()
    model = args.model
    if model is None:
        conn, resp = request(args.url, "GET", "/models", api_key=args.api_key)
        model = json.load(resp)["data"][0]["id"]
        conn.close()

    rows = []
    for c in [int(x) for x in args.concurrency.split(",")]:
        results = [dict() for _ in range(c)]
        errors = []

        def worker(i):
            try:
                one(args, model, t0, results[i])
            except Exception as e:  # reported and counted as failed, the others go on
                errors.append(f"request {i} failed: {e}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(c)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = [r for r in results if r]
        for e in errors:
            print(e, file=sys.stderr)
        wall = (max(r["end"] for r in ok) - t0) if ok else float("nan")
        tokens = sum(r["tokens"] for r in ok)
        # Decoding: from the first stream's first token to the last stream's last one.
        span = (max(r["end"] for r in ok) - min(r["first"] for r in ok)) if ok else float("nan")
        together = max(0.0, min(r["end"] for r in ok) - max(r["first"] for r in ok)) / span if span > 0 else float("nan")
        decode_tok_s = sum(r["tokens"] - 1 for r in ok) / span if span > 0 else float("nan")
        ttft = sorted(r["ttft_ms"] for r in ok)
        per_stream = sorted((r["tokens"] - 1) / (r["decode_ms"] / 1e3) for r in ok if r["decode_ms"] > 0)
        row = {"concurrency": c, "answered": len(ok), "failed": c - len(ok), "tokens": tokens, "wall_s": wall,
               "aggregate_tok_s": tokens / wall, "decode_tok_s": decode_tok_s, "decode_span_s": span,
               "decode_together": together, "stream_tok_s_p50": percentile(per_stream, 0.5),
               "stream_tok_s_min": per_stream[0] if per_stream else float("nan"),
               "ttft_ms_p50": percentile(ttft, 0.5), "ttft_ms_p99": percentile(ttft, 0.99),
               # the first token, visible text or not, as the server timed it (wgfuse only)
               "server_first_token_ms_p50": percentile(sorted(r["server_first_token_ms"] for r in ok
                                                              if r.get("server_first_token_ms") is not None), 0.5)}
        rows.append(row)
        print(f"C={c}: {len(ok)}/{c} answered, {tokens} tokens in {wall:.2f} s = {row['aggregate_tok_s']:.1f} tok/s "
              f"served; decode {decode_tok_s:.1f} tok/s in all over {span:.2f} s ({together:.0%} of it all {c} "
              f"streams together); per stream p50 {row['stream_tok_s_p50']:.1f}, min {row['stream_tok_s_min']:.1f} tok/s; "
              f"TTFT p50 {row['ttft_ms_p50']:.0f} ms, p99 {row['ttft_ms_p99']:.0f} ms (server's first token p50 "
              f"{row['server_first_token_ms_p50']:.0f} ms)", flush=True)
    joined = join_long(args, model) if args.join_long else None
    health = server_health(args.url)
    if health and "joins" in health:  # wgfuse serve --parallel: what the joins cost (serve::WorkerStatus)
        print(f"joins: {json.dumps(health['joins'])}; moved into the batch {health.get('moved_to_batch')}, "
              f"out of it {health.get('moved_out_of_batch')}", flush=True)
    if health and "rounds" in health:  # the batched rounds and the worker's time on them
        print(f"rounds: {json.dumps(health['rounds'])}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"url": args.url, "model": model, "max_tokens": args.max_tokens, "rows": rows,
                       "join_long": joined, "health": health}, f, indent=2)
            f.write("\n")
    return 0 if all(r["failed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
